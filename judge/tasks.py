"""Celery tasks of the judge queue: a judgment of a finished run."""

from celery import shared_task
from django.contrib.auth.models import User

from runs.models import Run

from .judging import judge


@shared_task(name="judge.tasks.judge_run")  # type: ignore[untyped-decorator]  # celery ships no type information
def judge_run(
    run_id: int,
    judge_context: list[str] | None = None,
    requested_by_id: int | None = None,
    model: str | None = None,
    mode: str | None = None,
) -> int | None:
    """Judge the run (its own judge_context unless one is given, JUDGE_MODEL unless a model is, in the run's judge
    mode unless one is given); returns the Judgment's id."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return None
    requested_by = User.objects.filter(pk=requested_by_id).first() if requested_by_id else None
    return judge(run, judge_context=judge_context, requested_by=requested_by, model=model, mode=mode).pk
