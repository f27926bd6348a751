"""Where judging meets runs without runs importing judge (judge builds on runs, never the other way round): the
signal that hands a launch's outcome rubric to the judge app, and the latest judge verdict of a run, read through the
`judgments` relation judge's Judgment declares on Run."""

from django.db.models import OuterRef, Subquery
from django.dispatch import Signal

from .models import Run

# Sent inside the launch's transaction, before the run is enqueued, when a launch asks for an outcome evaluation;
# receivers get `run` (Run) and `outcome` (the cleaned {description, rubric, max_iterations}). The judge app stores it
# (its AppConfig.ready connects the receiver), so the worker that picks the run up finds the outcome in place.
outcome_requested = Signal()


def latest_judge_verdict() -> Subquery:
    """The verdict of the run's latest judgment ("pass", "fail", "uncertain"), or NULL for an unjudged run: a subquery
    over the outer run, so a list annotates it in its one query, with no query per row."""
    latest = (
        Run.objects.filter(pk=OuterRef("pk"))
        .order_by("-judgments__judged_at", "-judgments__id")
        .values("judgments__verdict")[:1]
    )
    return Subquery(latest)
