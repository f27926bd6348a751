"""Listeners: a scheduled run's run.finished and run.judged settle its firing (data changes, failures, the pause)."""

from typing import Any

from django.dispatch import receiver

from runs.models import Event, Run
from runs.signals import run_lifecycle_event

from . import services


@receiver(run_lifecycle_event, dispatch_uid="schedules.on_run_event")
def on_run_event(sender: type[Run], run: Run, event: Event, **kwargs: Any) -> None:
    services.settle(run, event.type)
