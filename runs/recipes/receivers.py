"""Listeners: a replay's run.finished and run.judged settle what it saved and whether it proposes a new version."""

from typing import Any

from django.dispatch import receiver

from runs.models import Event, Run
from runs.signals import run_lifecycle_event

from . import services


@receiver(run_lifecycle_event, dispatch_uid="recipes.on_run_event")
def on_run_event(sender: type[Run], run: Run, event: Event, **kwargs: Any) -> None:
    services.settle(run, event.type)
