"""The schedules app: cron schedules (rows of django-celery-beat) that launch ordinary runs, each firing once."""

from django.apps import AppConfig


class SchedulesConfig(AppConfig):
    name = "schedules"

    def ready(self) -> None:
        from . import receivers  # noqa: F401, PLC0415 (lazy: connects the run listeners once the models are ready)
