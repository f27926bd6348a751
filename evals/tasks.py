"""Celery tasks of evaluations: launching a batch's next runs as slots free, and finishing it."""

from celery import shared_task

from . import services


@shared_task(name="evals.tasks.advance_batch", ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def advance_batch(batch_id: int) -> int:
    """Fill the batch's free concurrency slots and finish it when everything ended; returns the runs launched."""
    return services.fill_slots(batch_id)
