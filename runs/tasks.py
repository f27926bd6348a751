"""Celery tasks of the runs queue: executing a run, and reaping runs whose worker was lost."""

from celery import shared_task

from . import lifecycle


@shared_task(name="runs.tasks.reap_stale_runs")
def reap_stale_runs() -> list[str]:
    return lifecycle.reap_stale_runs()
