"""Project wiring and platform-wide concerns: settings, the Celery app, the API root, workspaces and billing."""

from .celery import app as celery_app

__all__ = ["celery_app"]
