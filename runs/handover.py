"""A run that outlives its worker. A worker that is lost (its heartbeat went stale) or asked to stop (SIGTERM: a
deploy) hands its runs over: each goes on, on another worker, from its last checkpoint (written with each turn's
record, runtime.checkpoint), redoing at most the turn that was in progress.

`Run.handovers` fences the workers: each handover adds one, and a worker's writes (its heartbeat, its turns' records,
its checkpoints, its run's ending) name the count it claimed the run under, so a worker that was only slow, not gone,
cannot write over the worker that continued its run. Past RUN_MAX_RECOVERIES lost workers the run ends `worker_lost`,
as it did before runs could be continued. A sign-in by hand is never continued: a person was driving it.
"""

import functools
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from . import event_types, tasks
from .events import emit
from .models import Event, Run, RunCheckpoint, RunInput

log = logging.getLogger(__name__)

# Why a run was handed over (run.recovered's `cause`).
WORKER_LOST = "worker_lost"
DRAINED = "drain"

HANDOVER_EVENTS = {WORKER_LOST: event_types.RUN_WORKER_LOST.name, DRAINED: event_types.RUN_HANDED_OVER.name}


def continuable(run: Run) -> bool:
    """Whether a run whose worker was lost is continued: an agent's run, lost fewer than RUN_MAX_RECOVERIES times."""
    return run.kind == Run.Kind.AGENT and run.worker_losses < settings.RUN_MAX_RECOVERIES


def hand_over(run: Run, *, handovers: int, cause: str, worker: str) -> bool:
    """Give the run, claimed under `handovers`, to the next worker; False when it was not this worker's to give (it
    ended, or was handed over already). Its message goes out once the handover commits."""
    now = timezone.now()
    lost = cause == WORKER_LOST
    with transaction.atomic():
        changed = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING, handovers=handovers).update(
            handovers=F("handovers") + 1,
            worker_losses=F("worker_losses") + (1 if lost else 0),
            worker="",
            handed_over_at=now,
            heartbeat_at=now,
        )
        if not changed:
            return False
        run.refresh_from_db()
        # a question the lost worker was waiting on is asked again by the next worker (the turn that asked is redone)
        RunInput.objects.filter(run=run, state=RunInput.State.PENDING).update(state=RunInput.State.CLOSED)
        checkpoint = RunCheckpoint.objects.filter(run=run).order_by("-id").values_list("turn", flat=True).first()
        emit(
            run,
            HANDOVER_EVENTS[cause],
            {
                "worker": worker,
                "cause": cause,
                "worker_losses": run.worker_losses,
                # the model requests answered by the last checkpoint: the next worker goes on from there
                "checkpoint_turn": checkpoint or 0,
            },
        )
        transaction.on_commit(functools.partial(send_continuation, run.pk, run.queue))
    log.warning("run %s handed over by worker %s (%s)", run.public_id, worker or "unknown", cause)
    return True


def send_continuation(run_pk: int, queue: str = "") -> None:
    """The message that has a worker continue a handed-over run, on the queue it ran on (the runs queue when that is
    not known). A lost message is sent again by the reaper (redeliver_handed_over)."""
    try:
        tasks.execute_run.apply_async(args=[run_pk], kwargs={"handed_over": True}, queue=queue or None)
    except Exception:
        log.warning("run pk %s waits for the broker to be continued", run_pk, exc_info=True)


def claim_handed_over(run_id: int, worker: str, queue: str = "") -> Run | None:
    """Claim a handed-over run for this worker; None if it was claimed by another, ended or was never handed over."""
    with transaction.atomic():
        claimed = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING, handed_over_at__isnull=False).update(
            worker=worker, queue=queue, handed_over_at=None, heartbeat_at=timezone.now()
        )
        if not claimed:
            return None
        return Run.objects.select_related("session").get(pk=run_id)


def why_handed_over(run: Run) -> str:
    """The cause of the run's last handover, from its event."""
    last = run.events.filter(type__in=HANDOVER_EVENTS.values()).order_by("-seq").values_list("type", flat=True).first()
    return DRAINED if last == HANDOVER_EVENTS[DRAINED] else WORKER_LOST


def redeliver_handed_over(waiting_for: timedelta | None = None) -> list[str]:
    """Send again the message of runs handed over longer than RUN_STALE_AFTER_SECONDS ago and still not continued
    (the message was lost with the broker, or every worker is gone): a worker that starts later continues them."""
    waiting_for = timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS) if waiting_for is None else waiting_for
    cutoff = timezone.now() - waiting_for
    sent = []
    for run in Run.objects.filter(status=Run.Status.RUNNING, handed_over_at__lt=cutoff):
        # touched, so the next pass waits a period again before sending once more
        Run.objects.filter(pk=run.pk, handed_over_at__isnull=False).update(handed_over_at=timezone.now())
        send_continuation(run.pk, run.queue)
        sent.append(run.public_id)
    return sent


def forget_checkpoints(run: Run) -> None:
    """A run that ended needs no checkpoint: its conversation and sealed browser state go."""
    RunCheckpoint.objects.filter(run=run).delete()


def recovered_event(run: Run, *, worker: str, from_turn: int, cause: str) -> Event:
    return emit(run, "run.recovered", {"worker": worker, "from_turn": from_turn, "cause": cause})
