"""Listeners: a scheduled run's run.finished and run.judged settle its firing (data changes, failures, the pause)."""

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import receiver

from runs.models import Event, Run
from runs.signals import run_lifecycle_event

from . import services
from .models import Schedule


@receiver(run_lifecycle_event, dispatch_uid="schedules.on_run_event")
def on_run_event(sender: type[Run], run: Run, event: Event, **kwargs: Any) -> None:
    services.settle(run, event.type)


@receiver(post_delete, sender=Schedule, dispatch_uid="schedules.on_schedule_deleted")
def on_schedule_deleted(sender: type[Schedule], instance: Schedule, **kwargs: Any) -> None:
    """Beat's rows go with the schedule, however it was deleted (API, page, admin, its workspace)."""
    services.delete_beat(instance)
