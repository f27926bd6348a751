"""Celery tasks of the runs queue, as a worker runs them: executing a run, and reaping runs whose worker was lost.

Their names are their module's (runtime.tasks.*). The web sends them by name (runs.tasks holds the signatures); a
worker's autodiscovery imports this module (agent_platform.celery). Until 2026-12-06 they were named runs.tasks.*:
a worker still answers those names for one release, so a message queued before an upgrade (a run waiting for a
worker, a handed-over run, the previous beat's reaper) is not lost."""

from celery import Task, shared_task

from browsers import services as browser_sessions
from runs import handover, lifecycle, purge
from runtime import drain
from runtime.worker import execute_run as run_loop

# How often a follow-up queued behind its session's earlier run looks again.
WAIT_BEHIND_SECONDS = 2


@shared_task(name="runtime.tasks.execute_run", bind=True, acks_late=True, max_retries=0, ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
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
    execute_message(self, run_id, fair, handed_over)


def execute_message(self: Task, run_id: int, fair: bool, handed_over: bool) -> None:
    """What execute_run does with its message, under whichever name it came (this task's `self`: its own request)."""
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


@shared_task(name="runtime.tasks.reap_stale_runs")  # type: ignore[untyped-decorator]
def reap_stale_runs() -> list[str]:
    """The reaper (Celery beat, every 30 s): hands over (or, past their limit, fails) runs whose worker was lost, sends
    again the messages of handed-over runs nobody continued, re-enqueues runs nobody claimed (all at
    once after a broker restart no worker noticed), admits runs a workspace's limit let wait whose admission was
    missed; and ends the browser sessions whose worker was lost."""
    restarted = lifecycle.redeliver_after_broker_restart()
    lifecycle.admit_waiting_runs()
    handed_over = lifecycle.reap_stale_runs()
    lost_browsers = browser_sessions.reap_lost_sessions()
    return (
        restarted + handed_over + handover.redeliver_handed_over() + lifecycle.redeliver_queued_runs() + lost_browsers
    )


@shared_task(name="runtime.tasks.apply_retention", ignore_result=True)  # type: ignore[untyped-decorator]
def apply_retention() -> dict[str, int]:
    """Retention (Celery beat, hourly): each workspace's runs that ended longer ago than it keeps content are purged,
    its old uploads deleted, in the database and in storage (runs.purge)."""
    return purge.apply_retention()


# The names of the two tasks until 2026-12-06. Remove these after 2027-01-06, once a release has run that sends only
# the new names (no queued message, handed-over run or beat entry can still carry an old one by then).
@shared_task(name="runs.tasks.execute_run", bind=True, acks_late=True, max_retries=0, ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def execute_run_by_former_name(self: Task, run_id: int, fair: bool = False, handed_over: bool = False) -> None:
    execute_message(self, run_id, fair, handed_over)


@shared_task(name="runs.tasks.reap_stale_runs")  # type: ignore[untyped-decorator]
def reap_stale_runs_by_former_name() -> list[str]:
    result: list[str] = reap_stale_runs()
    return result
