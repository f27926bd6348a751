"""The two wings: the web process loads neither Playwright nor the worker's runtime, and a worker registers every
task under the name messages in flight and the beat schedule use."""

import json
import os
import subprocess
import sys

from tests.support.paths import REPO

# What the web process loads: the settings and apps (with their system checks), the URLconf with every view and the
# API, and the ASGI application with the live sockets' routing and the MCP server's tools.
WEB_PROCESS = """
import json, sys
import django
django.setup()
from django.core import checks
from django.urls import get_resolver
checks.run_checks()
get_resolver().url_patterns
from agent_platform.asgi import application
from agent_platform.api import api
api.get_openapi_schema()
print(json.dumps(sorted(sys.modules)))
"""

# What a worker does at start before it takes a task: Celery's autodiscovery of the apps' task modules (and the
# runtime's worker module, whose signals warm the browser up).
WORKER_DISCOVERY = """
import json, sys
import django
django.setup()
from agent_platform.celery import app
from tests.support.paths import REPO
app.loader.import_default_modules()
print(json.dumps({"tasks": sorted(app.tasks), "modules": sorted(sys.modules)}))
"""

TASK_NAMES = [
    "evals.tasks.advance_batch",
    "evals.tasks.score_rules",
    "judge.tasks.judge_run",
    "runtime.tasks.execute_run",
    "runtime.tasks.reap_stale_runs",
    # their former names, answered for one release (runtime/tasks.py says until when)
    "runs.tasks.execute_run",
    "runs.tasks.reap_stale_runs",
    "webhooks.tasks.deliver",
    "webhooks.tasks.send_overdue",
]


def run_python(code: str) -> object:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="agent_platform.settings")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def is_worker_side(module: str) -> bool:
    top = module.split(".")[0]
    return top == "runtime" or top.startswith("playwright")


def test_the_web_process_loads_neither_playwright_nor_the_runtime():
    modules = run_python(WEB_PROCESS)
    assert "runs.views" in modules and "agent_platform.asgi" in modules  # the web really was loaded
    assert "mcp_server.endpoint" in modules and "mcp_server.tools" in modules
    assert [module for module in modules if is_worker_side(module)] == []


def test_a_worker_discovers_every_task_under_its_name_and_the_runtimes_worker_module():
    discovered = run_python(WORKER_DISCOVERY)
    assert set(TASK_NAMES) <= set(discovered["tasks"])
    assert "runtime.worker" in discovered["modules"]


def test_a_started_worker_registers_every_task_under_its_name(celery_worker):
    # The worker prints its registered tasks in its banner before it says it is ready.
    banner = celery_worker.log_path.read_text()
    registered = {line.strip().removeprefix(". ") for line in banner.splitlines() if line.strip().startswith(". ")}
    assert set(TASK_NAMES) <= registered
