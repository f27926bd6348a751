"""The one Celery app: runs and judging are tasks on their own queues, configured from Django settings."""

import os

from celery import Celery

# Connects the signals that carry a trace's context in every message this app sends and runs (a no-op untraced).
from . import telemetry  # noqa: F401

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")

app = Celery("agent_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# A worker also imports the runtime's tasks (runtime.tasks, and with it runtime.worker, whose signals warm the browser
# up and close it); the web process, which only sends tasks (runs.tasks), never runs this discovery.
app.autodiscover_tasks(["runtime"])
app.autodiscover_tasks(["runtime"], related_name="browser_sessions")
