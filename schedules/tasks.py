"""Celery task of schedules: beat sends it at each time a schedule's cron names (its PeriodicTask's crontab)."""

from datetime import datetime

from celery import shared_task
from django.utils import timezone

from . import services


@shared_task(name="schedules.tasks.fire", ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def fire(schedule_id: str, now: str | None = None) -> None:
    """Launch the schedule's run for its current slot, once. `now` (ISO 8601) replaces the clock: tests drive time."""
    services.fire(schedule_id, datetime.fromisoformat(now) if now else timezone.now())
