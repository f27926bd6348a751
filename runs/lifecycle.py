"""A run's state changes: started, finished, cancel requested, failing runs whose worker was lost, and enqueueing
again runs whose message was lost."""

import functools
import logging
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from agent_platform import broker
from judge.services import judge_on_finish

from . import handover, queueing, spending, tasks
from .events import emit
from .human import close_inputs, wake
from .models import Event, Run, RunMessage

log = logging.getLogger(__name__)


def mark_started(run: Run, worker: str, queue: str = "") -> bool:
    """Claim a queued run for this worker; False if it was already claimed, cancelled or finished. A worker driven by
    the scripted model (SCRIPTED_MODEL, the worker's own setting) labels the agent runs it claims scripted, before
    run.started says so."""
    now = timezone.now()
    claim: dict[str, Any] = {
        "status": Run.Status.RUNNING,
        "started_at": now,
        "heartbeat_at": now,
        "worker": worker,
        "queue": queue,
    }
    if settings.SCRIPTED_MODEL and run.kind == Run.Kind.AGENT:
        claim["scripted"] = True
    with transaction.atomic():
        claimed = Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(**claim)
        if not claimed:
            return False
        run.refresh_from_db()
        emit(run, "run.started", {"model": run.model, "max_turns": run.max_turns, "scripted": run.scripted})
    return True


# A claim lost to another worker's pick tries the next fairest run; bounded, then the message's own run decides.
CLAIM_ATTEMPTS = 5


def claim_fairly(message_run_id: int, worker: str, queue: str = "") -> Run | None:
    """Claim, for this worker, the fairest admitted run in place of the one the message names (runs.queueing says
    why the messages are interchangeable); None when nothing is left to claim: the message's own run was already
    claimed, by a worker that took it in place of another, or it was cancelled."""
    tried: set[int] = set()
    for _ in range(CLAIM_ATTEMPTS):
        pick = queueing.fairest(tried)
        if pick is None:
            break
        run = Run.objects.select_related("session").get(pk=pick)
        if mark_started(run, worker, queue):
            if pick != message_run_id:
                log.info("worker %s took run %s in place of run pk %s, the fairer pick", worker, run, message_run_id)
            return run
        tried.add(pick)
    # No pick was claimable (they raced with other workers): the message's own run, if it was admitted.
    own = Run.objects.select_related("session").filter(pk=message_run_id, admitted_at__isnull=False).first()
    if own is not None and mark_started(own, worker, queue):
        return own
    return None


def claim(run_id: int, worker: str, queue: str = "") -> Run | None:
    """Claim exactly this run for this worker; None if it does not exist or was claimed, cancelled or finished."""
    run = Run.objects.select_related("session").filter(pk=run_id).first()
    return run if run is not None and mark_started(run, worker, queue) else None


def admit(workspace_id: int) -> None:
    """Admit the workspace's waiting runs its concurrency limit allows, and enqueue each once that commits."""
    for run_pk in queueing.admit(workspace_id):
        transaction.on_commit(functools.partial(enqueue, run_pk))


def wait_behind_earlier_run(run_id: int) -> bool:
    """True while a queued run's session has an earlier run still queued or running; says so once, in a run.waiting
    event naming that run (a run always waits behind its session's runs in launch order)."""
    run = Run.objects.filter(pk=run_id, status=Run.Status.QUEUED).first()
    if run is None:
        return False
    # A queued run older than two run time limits has no task coming for it (it was lost before a worker took it):
    # waiting for it would be waiting forever.
    orphaned_before = timezone.now() - timedelta(seconds=2 * settings.RUN_TIME_LIMIT_SECONDS)
    earlier = (
        Run.objects.filter(session_id=run.session_id, pk__lt=run.pk)
        .filter(Q(status=Run.Status.RUNNING) | Q(status=Run.Status.QUEUED, created_at__gte=orphaned_before))
        .order_by("-pk")
        .first()
    )
    if earlier is None:
        return False
    if not run.events.filter(type="run.waiting", payload__behind=earlier.public_id).exists():
        emit(run, "run.waiting", {"behind": earlier.public_id, "behind_status": earlier.status})
    return True


def heartbeat(run: Run, handovers: int | None = None) -> bool:
    """The worker holding the run is alive. With `handovers` (what the run's was when this worker claimed it), only if
    the run is still this worker's (runs.handover): False when it was handed over to another since."""
    if handovers is None:
        return bool(Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(heartbeat_at=timezone.now()))
    mine = Run.objects.filter(pk=run.pk, handovers=handovers, handed_over_at__isnull=True)
    return bool(mine.filter(status=Run.Status.RUNNING).update(heartbeat_at=timezone.now())) or mine.exists()


def heartbeats(claims: Collection[tuple[int, int]]) -> set[int]:
    """Beat for many runs of one worker process in one statement: `claims` are (run pk, the handovers it was claimed
    under), and each row is written only while it is still that worker's, as `heartbeat` fences one. Returns the pks of
    the runs handed over to another worker since (the rest beat, or ended while still this worker's)."""
    if not claims:
        return set()
    table = connection.ops.quote_name(Run._meta.db_table)
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    # Only the table name and the placeholders are interpolated. (id, handovers) IN (VALUES ...): SQLite takes a row
    # value only against a subquery; PostgreSQL takes both.
    beat = f"UPDATE {table} SET heartbeat_at = %s WHERE status = %s AND handed_over_at IS NULL AND (id, handovers) IN "  # noqa: S608
    mine = f"SELECT id FROM {table} WHERE handed_over_at IS NULL AND (id, handovers) IN "  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(f"{beat}{_values(claims)} RETURNING id", [now, Run.Status.RUNNING, *_flat(claims)])
        beaten = {row[0] for row in cursor.fetchall()}
        missed = [claim for claim in claims if claim[0] not in beaten]
        if not missed:
            return set()
        # Not running any more (ended while still this worker's) is not superseded: only another worker's claim is.
        cursor.execute(f"{mine}{_values(missed)}", _flat(missed))
        still_mine = {row[0] for row in cursor.fetchall()}
    return {pk for pk, _ in missed if pk not in still_mine}


def _values(claims: Collection[tuple[int, int]]) -> str:
    return f"(VALUES {', '.join(['(%s, %s)'] * len(claims))})"


def _flat(claims: Collection[tuple[int, int]]) -> list[int]:
    return [value for claim in claims for value in claim]


def finish(
    run: Run,
    status: str,
    *,
    success: bool | None = None,
    output: str = "",
    data: Any = None,
    error_code: str = "",
    error_message: str = "",
    signals: dict[str, Any] | None = None,
    handovers: int | None = None,
) -> bool:
    """Record a run's end once: a run that already ended (by the reaper, say) keeps its first ending. With
    `handovers`, only if the run is still the worker's that claimed it under that count (runs.handover)."""
    now = timezone.now()
    fields = {
        "status": status,
        "success": success,
        "output": output,
        "data": data,
        "error_code": error_code,
        "error_message": error_message,
        "finished_at": now,
        "secrets": {},  # a run's secrets are needed only while it runs
        "paused_at": None,
    }
    if signals is not None:
        fields["signals"] = signals
    with transaction.atomic():
        unfinished = Run.objects.filter(pk=run.pk).exclude(status__in=Run.TERMINAL)
        if handovers is not None:
            unfinished = unfinished.filter(handovers=handovers)
        fields["handed_over_at"] = None
        if not unfinished.update(**fields):
            return False
        run.refresh_from_db()
        handover.forget_checkpoints(run)
        # Its slot is free: the workspace's next waiting run goes to the workers once this ending commits.
        transaction.on_commit(functools.partial(admit, run.workspace_id))
        close_inputs(run)
        emit(
            run,
            "run.finished",
            {
                "status": status,
                "success": success,
                "error_code": error_code or None,
                "error_message": error_message or None,
            },
        )
        judge_on_finish(run)
    return True


def request_cancel(run: Run) -> Run:
    """Idempotent. A queued run is cancelled at once; a running one stops at the loop's next safe point."""
    with transaction.atomic():
        Run.objects.filter(pk=run.pk, cancel_requested_at__isnull=True).exclude(status__in=Run.TERMINAL).update(
            cancel_requested_at=timezone.now()
        )
        run.refresh_from_db()
        wake(run)  # a run waiting for a person (a question, a pause, a sign-in by hand) sees the cancel at once
        if run.status == Run.Status.QUEUED:
            finish(
                run,
                Run.Status.CANCELLED,
                error_code=Run.ErrorCode.CANCELLED,
                error_message="Cancelled by an operator before it started.",
            )
        elif run.handed_over_at is not None:
            # no worker holds it to see the cancel: it ends now, and the worker its message reaches finds it ended
            finish(
                run,
                Run.Status.CANCELLED,
                error_code=Run.ErrorCode.CANCELLED,
                error_message="Cancelled by an operator while it waited to be continued on another worker.",
            )
    run.refresh_from_db()
    return run


def cancel_requested(run: Run) -> bool:
    return Run.objects.filter(pk=run.pk, cancel_requested_at__isnull=False).exists()


@dataclass(frozen=True)
class Turn:
    """What the agent loop reads of its run before each model request, in one query: a cancel, a pause, messages
    people queued for the agent, and what it has spent and may spend (runs.spending.Caps)."""

    cancel_requested: bool
    paused: bool
    messages_queued: bool
    caps: spending.Caps


def before_request(run: Run) -> Turn:
    queued = RunMessage.objects.filter(run=OuterRef("pk"), delivered_at__isnull=True)
    cancel_at, paused_at, messages_queued, *caps = (
        Run.objects.filter(pk=run.pk)
        .annotate(messages_queued=Exists(queued))
        .values_list("cancel_requested_at", "paused_at", "messages_queued", *spending.CAP_FIELDS)
        .get()
    )
    return Turn(cancel_at is not None, paused_at is not None, messages_queued, spending.Caps(*caps))


def reap_stale_runs(stale_after: timedelta | None = None) -> list[str]:
    """Running runs whose worker stopped writing heartbeats: each is handed over to another worker, which continues
    it from its last checkpoint (runs.handover), or, past RUN_MAX_RECOVERIES lost workers (or a sign-in by hand,
    which a person was driving), fails `worker_lost`. Their events stay."""
    stale_after = timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS) if stale_after is None else stale_after
    cutoff = timezone.now() - stale_after
    reaped = []
    stale = Run.objects.filter(status=Run.Status.RUNNING, heartbeat_at__lt=cutoff, handed_over_at__isnull=True)
    for run in stale:
        worker = run.worker or "unknown"
        if handover.continuable(run):
            if handover.hand_over(run, handovers=run.handovers, cause=handover.WORKER_LOST, worker=worker):
                reaped.append(run.public_id)
            continue
        if run.kind == Run.Kind.SIGN_IN:
            message = f"The worker running this sign-in ({worker}) stopped responding."
        else:
            limit = settings.RUN_MAX_RECOVERIES
            message = (
                f"The worker running this run ({worker}) stopped responding, and the run had already been continued "
                f"after {run.worker_losses} lost worker{'s' if run.worker_losses != 1 else ''}, its limit "
                f"(RUN_MAX_RECOVERIES={limit})."
            )
        if finish(
            run,
            Run.Status.FAILED,
            success=None,
            error_code=Run.ErrorCode.WORKER_LOST,
            error_message=message,
            handovers=run.handovers,
        ):
            log.warning("run %s failed: worker %s lost", run.public_id, worker)
            reaped.append(run.public_id)
    return reaped


def redeliver_queued_runs(
    queued_for: timedelta | None = None, *, reason: str = "not claimed by any worker"
) -> list[str]:
    """Enqueue again the runs queued longer than RUN_QUEUED_REDELIVER_SECONDS and not yet claimed: their message may
    have been lost with a non-persistent Redis. Safe if it was not lost: `mark_started` claims a run once, so a second
    message finds it claimed and does nothing. At most once per period per run, each time said in an event."""
    queued_for = timedelta(seconds=settings.RUN_QUEUED_REDELIVER_SECONDS) if queued_for is None else queued_for
    cutoff = timezone.now() - queued_for
    recently = Event.objects.filter(run=OuterRef("pk"), type="run.requeued", processed_at__gte=cutoff)
    redelivered = []
    # Only admitted runs have a message to lose; a run waiting for its workspace's limit has none yet.
    late = Run.objects.filter(status=Run.Status.QUEUED, admitted_at__lt=cutoff).exclude(Exists(recently))
    for run in late:
        waited = int((timezone.now() - (run.admitted_at or run.created_at)).total_seconds())
        with transaction.atomic():
            emit(run, "run.requeued", {"waited_seconds": waited, "reason": reason})
            transaction.on_commit(functools.partial(enqueue, run.pk))
        log.warning("run %s was queued for %s s (%s); enqueued again", run.public_id, waited, reason)
        redelivered.append(run.public_id)
    return redelivered


def redeliver_after_broker_restart() -> list[str]:
    """Enqueue again, at once, every admitted run not yet claimed when the broker's Redis restarted (its queues went
    with it), instead of waiting RUN_QUEUED_REDELIVER_SECONDS for each: a worker calls this when it (re)connects to
    the broker, the reaper on each pass. Only the first caller after a restart redelivers
    (agent_platform.broker.restarted); a run whose message survived after all is claimed once."""
    if not broker.restarted():
        return []
    continued = handover.redeliver_handed_over(timedelta(0))
    return continued + redeliver_queued_runs(timedelta(0), reason="the broker restarted and lost its queue")


def admit_waiting_runs() -> None:
    """The reaper's safety net for admissions (runs.queueing.waiting_workspaces)."""
    for workspace_id in queueing.waiting_workspaces():
        admit(workspace_id)


def enqueue(run_pk: int) -> None:
    """Hand the committed run to a worker. A broker that cannot take the message does not lose the run: it goes back
    to waiting for admission (queued, with no message, which is what waiting means), and is admitted and sent again
    as soon as a worker reconnects to the broker (runtime.worker.BrokerReconnected), or by the reaper's next pass."""
    try:
        tasks.execute_run.delay(run_pk, fair=True)
    except Exception:
        # Conditional: a worker that got the message after all (a publish that timed out after sending) claimed it.
        Run.objects.filter(pk=run_pk, status=Run.Status.QUEUED).update(admitted_at=None)
        log.warning("run pk %s waits for the broker: its message could not be sent", run_pk, exc_info=True)
