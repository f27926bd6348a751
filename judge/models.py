"""Judgments of finished runs, and the outcomes (rubrics) a run is evaluated against, cycle by cycle."""

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from agent_platform import ids
from agent_platform.lib.timestamps import rfc3339
from runs.models import Run


class Judgment(models.Model):
    """One judge reading of a run; re-judging adds another, and the latest is shown first."""

    class Verdict(models.TextChoices):
        PASS = "pass"
        FAIL = "fail"
        UNCERTAIN = "uncertain"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="judgments")
    verdict = models.CharField(max_length=10, choices=Verdict.choices)
    reason = models.TextField()
    blocked = models.BooleanField(default=False)
    impossible = models.BooleanField(default=False)
    judge_context = models.JSONField(default=list, blank=True)
    model = models.CharField(max_length=100, blank=True)
    # standard (reads the agent's verdict and output) or key_points (writes the task's key points first, then reads
    # only the steps and screenshots); judge.judging.MODES
    mode = models.CharField(max_length=12, default="standard")
    key_points = models.JSONField(default=list, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    judged_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-judged_at", "-id"]
        indexes = [models.Index(fields=["run", "-judged_at"], name="judgment_run_judged")]

    def __str__(self) -> str:
        return f"{self.run} {self.verdict}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "blocked": self.blocked,
            "impossible": self.impossible,
            "judged_at": rfc3339(self.judged_at, milliseconds=True),
        }


class Outcome(models.Model):
    """What a run's deliverables are graded against: a description and a markdown rubric, for up to N cycles."""

    public_id = models.CharField(max_length=40, unique=True, default=ids.outcome_id, editable=False)
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="outcome")
    description = models.TextField()
    rubric = models.TextField()
    max_iterations = models.PositiveSmallIntegerField(default=3)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return self.public_id


class OutcomeEvaluation(models.Model):
    """One evaluation cycle: the grader's result for one iteration, with the ids of its start and end events."""

    class Result(models.TextChoices):
        SATISFIED = "satisfied"
        NEEDS_REVISION = "needs_revision"
        MAX_ITERATIONS_REACHED = "max_iterations_reached"
        FAILED = "failed"
        INTERRUPTED = "interrupted"

    TERMINAL = (Result.SATISFIED, Result.MAX_ITERATIONS_REACHED, Result.FAILED, Result.INTERRUPTED)

    outcome = models.ForeignKey(Outcome, on_delete=models.CASCADE, related_name="evaluations")
    iteration = models.PositiveSmallIntegerField()
    result = models.CharField(max_length=30, choices=Result.choices, blank=True)
    explanation = models.TextField(blank=True)
    start_event_id = models.CharField(max_length=40, blank=True)
    end_event_id = models.CharField(max_length=40, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_input_tokens = models.PositiveIntegerField(default=0)
    cache_creation_input_tokens = models.PositiveIntegerField(default=0)
    speed = models.CharField(max_length=10, null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["outcome", "iteration"]
        constraints = [
            models.UniqueConstraint(fields=["outcome", "iteration"], name="evaluation_unique_outcome_iteration")
        ]

    def __str__(self) -> str:
        return f"{self.outcome} #{self.iteration} {self.result or 'running'}"


def latest_judge_verdict() -> Subquery:
    """The verdict of the run's latest judgment ("pass", "fail", "uncertain"), or NULL for an unjudged run: a subquery
    over the outer run, so a list annotates it in its one query, with no query per row."""
    latest = Run.objects.filter(pk=OuterRef("pk")).order_by("-judgments__judged_at", "-judgments__id")
    return Subquery(latest.values("judgments__verdict")[:1])
