"""Listeners: run.finished, run.judged, run.input_requested, file.downloaded (from runs), batch.finished (from evals)
and schedule.data_changed and schedule.run_failed (from schedules) become webhook deliveries."""

from typing import Any

from django.dispatch import receiver

from evals.models import Batch
from evals.signals import batch_finished
from judge.models import Judgment
from runs.models import Event, Run
from runs.signals import run_lifecycle_event
from schedules.models import Schedule
from schedules.signals import schedule_event

from . import payloads, services
from .models import EventType


@receiver(run_lifecycle_event, dispatch_uid="webhooks.on_run_event")
def on_run_event(sender: type[Run], run: Run, event: Event, **kwargs: Any) -> None:
    if event.type == EventType.RUN_FINISHED:
        services.record_event(run.workspace_id, EventType.RUN_FINISHED, lambda: {"run": payloads.run_data(run)})
    elif event.type == EventType.RUN_JUDGED:
        services.record_event(run.workspace_id, EventType.RUN_JUDGED, lambda: judged_data(run, event))
    elif event.type == EventType.FILE_DOWNLOADED:
        services.record_event(
            run.workspace_id,
            EventType.FILE_DOWNLOADED,
            lambda: {"run": payloads.run_data(run), "file": dict(event.payload)},
        )
    elif event.type == EventType.RUN_INPUT_REQUESTED:
        services.record_event(
            run.workspace_id,
            EventType.RUN_INPUT_REQUESTED,
            lambda: {"run": payloads.run_data(run), "input": event.payload},
        )


@receiver(batch_finished, dispatch_uid="webhooks.on_batch_finished")
def on_batch_finished(sender: type[Batch], batch: Batch, **kwargs: Any) -> None:
    services.record_event(batch.workspace_id, EventType.BATCH_FINISHED, lambda: {"batch": payloads.batch_data(batch)})


@receiver(schedule_event, dispatch_uid="webhooks.on_schedule_event")
def on_schedule_event(
    sender: type[Schedule], schedule: Schedule, run: Run, type: str, data: dict[str, Any], **kwargs: Any
) -> None:
    services.record_event(
        schedule.workspace_id,
        EventType(type),
        lambda: {"schedule": payloads.schedule_data(schedule), "run": payloads.run_data(run), **event_fields(data)},
    )


def event_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The schedule event's own fields (diff, reason...), without the ids the schedule and run objects already carry."""
    return {key: value for key, value in data.items() if key not in ("schedule_id", "run_id")}


def judged_data(run: Run, event: Event) -> dict[str, Any]:
    judgment = Judgment.objects.get(pk=event.payload["judgment_id"], run=run)
    return {"run": payloads.run_data(run), "judgment": payloads.judgment_data(judgment)}
