"""Writing a run's events: committed to the database first, then pushed to the run's live group."""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from .models import Event, Run
from .secrets import mask

log = logging.getLogger(__name__)


def run_group(run_public_id: str) -> str:
    return f"run.{run_public_id}"


def workspace_group(workspace_id: int) -> str:
    return f"workspace.{workspace_id}"


# Events that change what a runs-list row shows; the list's socket is told about these only.
ROW_CHANGING_TYPES = frozenset({"run.started", "run.finished", "agent.usage", "agent.tool_result", "run.judged"})


def emit(run: Run, type: str, data: dict, *, public_id: str | None = None) -> Event:
    """Append an event to the run and, once it is committed, push it to live viewers.

    seq comes from the run row under a lock, so events are gap-free per run even when the judge and the agent
    write to the same run from different processes. `public_id` lets a caller put the event's own id in its data
    (the outcome evaluation spans do).
    """
    # The run's secrets never reach the record: their values are written as placeholders.
    data = mask(data, getattr(run, "secrets", None))
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(last_seq=F("last_seq") + 1)
        seq = Run.objects.filter(pk=run.pk).values_list("last_seq", flat=True).get()
        extra = {"public_id": public_id} if public_id else {}
        event = Event.objects.create(run=run, seq=seq, type=type, payload=data, **extra)
    run.last_seq = seq
    transaction.on_commit(lambda: push(run, event))
    return event


def push(run: Run, event: Event) -> None:
    """Best effort: the database already holds the event, and a viewer that misses a push gets it from the backlog."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "run.event", "event": event.as_dict()}
    try:
        async_to_sync(layer.group_send)(run_group(run.public_id), message)
        if event.type in ROW_CHANGING_TYPES:
            async_to_sync(layer.group_send)(
                workspace_group(run.workspace_id), {"type": "run.changed", "run_id": run.public_id}
            )
    except Exception:
        log.warning("live push of %s #%s failed; viewers will read it from the backlog", run.public_id, event.seq)
