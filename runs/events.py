"""Writing a run's events: committed to the database first, then pushed to the run's live group."""

import asyncio
import logging
import os
import threading
from datetime import datetime
from typing import Any

from channels.layers import get_channel_layer
from django.db import connection, transaction

from . import event_types
from .models import Event, Run
from .secrets import mask
from .signals import LIFECYCLE_EVENT_TYPES, run_lifecycle_event

log = logging.getLogger(__name__)


def run_group(run_public_id: str) -> str:
    return f"run.{run_public_id}"


def workspace_group(workspace_id: int) -> str:
    return f"workspace.{workspace_id}"


# Events that change what a runs-list row shows; the list's socket is told about these only.
ROW_CHANGING_TYPES = event_types.following(event_types.Follow.ROW)


def next_seq(run: Run) -> int:
    """Take the run's next seq; the row lock it takes orders concurrent writers (PostgreSQL and SQLite >= 3.35)."""
    table = connection.ops.quote_name(Run._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET last_seq = last_seq + 1 WHERE id = %s RETURNING last_seq", [run.pk])  # noqa: S608  (only the table name is interpolated)
        seq: int = cursor.fetchone()[0]
        return seq


def emit(
    run: Run, type: str, data: dict[str, Any], *, public_id: str | None = None, processed_at: datetime | None = None
) -> Event:
    """Append an event to the run and, once it is committed, push it to live viewers; a type the registry does not
    declare for runs (runs.event_types) is refused with ValueError, so nothing undeclared is ever stored.

    seq comes from the run row under a lock, so events are gap-free per run even when the judge and the agent
    write to the same run from different processes. `public_id` and `processed_at` let a caller put the event's own
    id and time in its data (the outcome evaluation spans do, as the spec shapes them).
    """
    event_types.check(type, event_types.Record.RUN)
    # The run's secrets never reach the record: their values are written as placeholders.
    data = mask(data, getattr(run, "secrets", None))
    with transaction.atomic():
        seq = next_seq(run)
        extra: dict[str, Any] = {"public_id": public_id} if public_id else {}
        if processed_at is not None:
            extra["processed_at"] = processed_at
        event = Event.objects.create(run=run, seq=seq, type=type, payload=data, **extra)
    run.last_seq = seq
    transaction.on_commit(lambda: push(run, event))
    if type in LIFECYCLE_EVENT_TYPES:
        transaction.on_commit(lambda: announce(run, event))
    return event


def announce(run: Run, event: Event) -> None:
    """Tell listening apps (batches, webhooks) a lifecycle event is committed; a failing listener is only logged."""
    for receiver, result in run_lifecycle_event.send_robust(sender=Run, run=run, event=event):
        if isinstance(result, Exception):
            log.error("listener %r of %s failed", receiver, event.type, exc_info=result)


def take_seqs(run: Run, count: int) -> int:
    """Take `count` consecutive seqs of the run in one statement (the row lock orders writers); the last one."""
    table = connection.ops.quote_name(Run._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq",  # noqa: S608  (only the table name is interpolated)
            [count, run.pk],
        )
        seq: int = cursor.fetchone()[0]
        return seq


def emit_many(run: Run, items: list[tuple[str, dict[str, Any], datetime]]) -> list[Event]:
    """Append several events, as (type, data, when it happened), with their seqs taken at once and one insert, in
    the caller's transaction (or one of their own); push them, in order, once committed, and announce the lifecycle
    ones as `emit` does."""
    if not items:
        return []
    for type, _data, _at in items:
        event_types.check(type, event_types.Record.RUN)
    secrets = getattr(run, "secrets", None)
    with transaction.atomic():
        last = take_seqs(run, len(items))
        first = last - len(items) + 1
        events = [
            Event(run=run, seq=first + index, type=type, payload=mask(data, secrets), processed_at=at)
            for index, (type, data, at) in enumerate(items)
        ]
        Event.objects.bulk_create(events)
    run.last_seq = last

    def push_all() -> None:
        for event in events:
            push(run, event)
        for event in events:
            if event.type in LIFECYCLE_EVENT_TYPES:
                announce(run, event)

    transaction.on_commit(push_all)
    return events


# What one push sends: (channel group, message) pairs, in order.
PushMessages = list[tuple[str, dict[str, Any]]]


def push(run: Run, event: Event) -> None:
    """Best effort: the database already holds the event, and a viewer that misses a push gets it from the backlog."""
    messages: PushMessages = [(run_group(run.public_id), {"type": "run.event", "event": event.as_dict()})]
    if event.type in ROW_CHANGING_TYPES:
        messages.append((workspace_group(run.workspace_id), {"type": "run.changed", "run_id": run.public_id}))
    pusher.send(messages)


class LivePusher:
    """Sends pushes from one background event loop per process, in the order they were made.

    `async_to_sync(group_send)` per event would start an event loop and a Redis connection every time (tens of
    milliseconds of each agent turn); here the loop and the channel layer's connections stay open, and the writer
    does not wait for Redis at all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._started: tuple[asyncio.AbstractEventLoop, asyncio.Queue[PushMessages]] | None = None

    def send(self, messages: PushMessages) -> None:
        started = self._start()
        if started is not None:
            loop, queue = started
            loop.call_soon_threadsafe(queue.put_nowait, messages)

    def _start(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue[PushMessages]] | None:
        """This process's loop and queue, started on first use; None without a channel layer."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child starts its own loop
                layer = get_channel_layer()
                if layer is None:
                    return None
                loop = asyncio.new_event_loop()
                queue: asyncio.Queue[PushMessages] = asyncio.Queue()
                threading.Thread(target=loop.run_forever, name="live-push", daemon=True).start()
                asyncio.run_coroutine_threadsafe(self._drain(layer, queue), loop)
                self._pid, self._started = os.getpid(), (loop, queue)
            return self._started

    @staticmethod
    async def _drain(layer: Any, queue: asyncio.Queue[PushMessages]) -> None:
        while True:
            messages = await queue.get()
            for group, message in messages:
                try:
                    await layer.group_send(group, message)
                except Exception:
                    event = message.get("event", {})
                    log.warning(
                        "live push to %s (seq %s) failed; viewers read it from the backlog", group, event.get("seq")
                    )


pusher = LivePusher()
