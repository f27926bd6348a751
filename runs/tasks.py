"""Celery tasks of the runs queue: executing a run, and reaping runs whose worker was lost."""

from celery import Task, shared_task

from . import lifecycle

# How often a follow-up queued behind its session's earlier run looks again.
WAIT_BEHIND_SECONDS = 2


@shared_task(name="runs.tasks.execute_run", bind=True, acks_late=True, max_retries=0, ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def execute_run(self: Task, run_id: int) -> None:
    """Run one run's agent loop in this worker thread; never retried, since a retry could repeat actions on the web.

    A follow-up whose session still has an earlier run queued or running waits for it (re-enqueued with a
    countdown, holding no worker thread), so it starts in the browser state that run leaves behind."""
    if lifecycle.wait_behind_earlier_run(run_id):
        self.apply_async(args=[run_id], countdown=WAIT_BEHIND_SECONDS)
        return
    from runtime.worker import execute_run as run_loop  # noqa: PLC0415 (lazy: the web enqueues through this module, and the runtime loads Playwright, which the web needn't)

    run_loop(run_id, worker=self.request.hostname or "worker")


@shared_task(name="runs.tasks.reap_stale_runs")  # type: ignore[untyped-decorator]  # celery ships no type information
def reap_stale_runs() -> list[str]:
    """The reaper (Celery beat, every 30 s): fails runs whose worker was lost, re-enqueues runs nobody claimed."""
    return lifecycle.reap_stale_runs() + lifecycle.redeliver_queued_runs()
