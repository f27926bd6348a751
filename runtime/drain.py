"""A worker asked to stop (SIGTERM or Ctrl-C: Celery's warm shutdown, as a deploy or `make run`'s supervisor gives
it) hands its runs over instead of running each to its end: each run's loop sees `requested` before its next model
request, once its last turn's record and checkpoint are committed, and hands the run over (runs.handover), which
another worker continues at once from that checkpoint. Celery stops taking messages itself.

A loop that cannot get there in WORKER_DRAIN_SECONDS (a long model request, a wait for a person) is handed over from
here at its last checkpoint, and the process exits: the worker that continues it redoes at most the turn that was in
progress, and the fence on the run's handovers refuses whatever the old loop would still write."""

from __future__ import annotations

import logging
import os
import threading
import time

from django.conf import settings
from django.db import connection

from runs import handover
from runs.models import Run

log = logging.getLogger(__name__)

requested = threading.Event()
_lock = threading.Lock()
_holding: dict[int, tuple[Run, int, str]] = {}  # run pk: the run, the handovers it was claimed under, the worker


def hold(run: Run, handovers: int, worker: str) -> None:
    with _lock:
        _holding[run.pk] = (run, handovers, worker)


def release(run: Run) -> None:
    with _lock:
        _holding.pop(run.pk, None)


def begin(**_signal_kwargs: object) -> None:
    """Celery's worker_shutting_down (a warm shutdown only: a cold one stops at once)."""
    if _signal_kwargs.get("how") == "Cold" or requested.is_set():
        return
    requested.set()
    with _lock:
        count = len(_holding)
    log.warning("worker stopping: handing over its %d run(s) within %d s", count, settings.WORKER_DRAIN_SECONDS)
    threading.Thread(target=deadline, name="drain-deadline", daemon=True).start()


def deadline() -> None:
    """Past WORKER_DRAIN_SECONDS: hand over every run still held, and exit."""
    time.sleep(settings.WORKER_DRAIN_SECONDS)
    with _lock:
        left = list(_holding.values())
    try:
        for run, handovers, worker in left:
            try:
                handover.hand_over(run, handovers=handovers, cause=handover.DRAINED, worker=worker)
            except Exception:
                log.exception("run %s could not be handed over", run.public_id)
    finally:
        connection.close()
    if left:
        log.warning("worker stopping: %d run(s) handed over at the drain deadline; exiting", len(left))
        logging.shutdown()
        os._exit(0)
