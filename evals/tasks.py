"""Celery tasks of evaluations: launching a batch's next runs as slots free, finishing it, and scoring a suite run
by its reference's rules."""

from celery import shared_task

from runs.models import Run

from . import scoring, services


@shared_task(name="evals.tasks.advance_batch", ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def advance_batch(batch_id: int) -> int:
    """Fill the batch's free concurrency slots and finish it when everything ended; returns the runs launched."""
    return services.fill_slots(batch_id)


@shared_task(name="evals.tasks.score_rules", ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def score_rules(run_id: int) -> bool | None:
    """Score the finished suite run against its task's reference; returns whether every rule held."""
    run = Run.objects.filter(pk=run_id).first()
    score = scoring.score_run(run) if run is not None else None
    return score.passed if score is not None else None
