"""Celery tasks of the runs queue, as a worker runs them: executing a run, and reaping runs whose worker was lost.

Their names are runs.tasks.*, as they were when they lived there: messages in flight and the beat schedule use them.
The web sends them by name (runs.tasks); a worker's autodiscovery imports this module (agent_platform.celery)."""

from celery import Task, shared_task

from runs import handover, lifecycle
from runtime import drain
from runtime.worker import execute_run as run_loop

# How often a follow-up queued behind its session's earlier run looks again.
WAIT_BEHIND_SECONDS = 2


@shared_task(name="runs.tasks.execute_run", bind=True, acks_late=True, max_retries=0, ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def execute_run(self: Task, run_id: int, fair: bool = False, handed_over: bool = False) -> None:
    """Run one run's agent loop in this worker thread; never retried, since a retry could repeat actions on the web.

    A `fair` message (every launch's, runs.lifecycle.enqueue) may claim a fairer admitted run in place of its own
    (runs.queueing); a message without it (sent before fair picks existed, or by hand to a worker's own queue) runs
    exactly the run it names.

    A follow-up whose session still has an earlier run queued or running waits for it (re-enqueued with a
    countdown, holding no worker thread), so it starts in the browser state that run leaves behind.

    A `handed_over` message continues a run another worker handed over (runs.handover) from its last checkpoint.

    A stopping worker (runtime.drain) may still be given a message (Celery's warm shutdown finishes what it fetched):
    it takes no run, and sends the message again, to the queue it came from, for another worker."""
    queue = (self.request.delivery_info or {}).get("routing_key") or ""
    if drain.requested.is_set():
        self.apply_async(args=[run_id], kwargs={"fair": fair, "handed_over": handed_over}, queue=queue or None)
        return
    if handed_over:
        run_loop(run_id, worker=self.request.hostname or "worker", queue=queue, handed_over=True)
        return
    if lifecycle.wait_behind_earlier_run(run_id):
        self.apply_async(args=[run_id], kwargs={"fair": fair}, countdown=WAIT_BEHIND_SECONDS)
        return
    run_loop(run_id, worker=self.request.hostname or "worker", queue=queue, fair=fair)


@shared_task(name="runs.tasks.reap_stale_runs")  # type: ignore[untyped-decorator]
def reap_stale_runs() -> list[str]:
    """The reaper (Celery beat, every 30 s): hands over (or, past their limit, fails) runs whose worker was lost, sends
    again the messages of handed-over runs nobody continued, re-enqueues runs nobody claimed (all at
    once after a broker restart no worker noticed), admits runs a workspace's limit let wait whose admission was
    missed."""
    restarted = lifecycle.redeliver_after_broker_restart()
    lifecycle.admit_waiting_runs()
    handed_over = lifecycle.reap_stale_runs()
    return restarted + handed_over + handover.redeliver_handed_over() + lifecycle.redeliver_queued_runs()
