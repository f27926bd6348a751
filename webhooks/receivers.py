"""Listeners: run.finished, run.judged, file.downloaded (from runs) and batch.finished (from evals) become webhook deliveries."""

from typing import Any

from django.dispatch import receiver

from evals.models import Batch
from evals.signals import batch_finished
from runs.judging.models import Judgment
from runs.models import Event, Run
from runs.signals import run_lifecycle_event

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


def judged_data(run: Run, event: Event) -> dict[str, Any]:
    judgment = Judgment.objects.get(pk=event.payload["judgment_id"], run=run)
    return {"run": payloads.run_data(run), "judgment": payloads.judgment_data(judgment)}
