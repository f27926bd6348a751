"""Batches of runs (tasks x configurations x repeats), their re-judging rounds, and the truths operators record."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agent_platform.ids import new_public_id
from agent_platform.models import Workspace
from runs.judging.models import Judgment
from runs.models import Run


def batch_id() -> str:
    return new_public_id("bat")


class BatchQuerySet(models.QuerySet["Batch"]):
    def for_workspace(self, workspace: Workspace) -> "BatchQuerySet":
        return self.filter(workspace=workspace)


class Batch(models.Model):
    """Every combination of a task, a configuration and a repeat is one run, launched as concurrency slots free."""

    class Status(models.TextChoices):
        RUNNING = "running"
        FINISHED = "finished"
        CANCELLED = "cancelled"

    public_id = models.CharField(max_length=40, unique=True, default=batch_id, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="batches")
    name = models.CharField(max_length=200, blank=True)
    repeats = models.PositiveSmallIntegerField(default=1)
    concurrency = models.PositiveSmallIntegerField(default=4)
    judge = models.BooleanField(default=True)
    # The k of pass@k shown on the page (the API gives every k up to the runs of a group).
    pass_k = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = BatchQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="batch_ws_created")]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return self.public_id


class BatchTask(models.Model):
    """One task of a batch's suite, with what the judge reads and, optionally, the data a run should hand back."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="tasks")
    position = models.PositiveSmallIntegerField()
    task = models.TextField()
    start_url = models.URLField(max_length=2000, blank=True)
    output_schema = models.JSONField(null=True, blank=True)
    judge_context = models.JSONField(default=list, blank=True)
    expected = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "position"]
        constraints = [models.UniqueConstraint(fields=["batch", "position"], name="batchtask_unique_position")]

    def __str__(self) -> str:
        return f"{self.batch} task {self.position + 1}"

    @property
    def label(self) -> str:
        first = self.task.splitlines()[0] if self.task else ""
        return first if len(first) <= 80 else first[:79] + "…"


class BatchConfig(models.Model):
    """One configuration every task of the batch runs with: model, effort and max_turns."""

    class Effort(models.TextChoices):
        DEFAULT = "", "default"
        LOW = "low"
        MEDIUM = "medium"
        HIGH = "high"
        MAX = "max"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="configs")
    position = models.PositiveSmallIntegerField()
    model = models.CharField(max_length=100)
    effort = models.CharField(max_length=10, choices=Effort.choices, blank=True)
    max_turns = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["batch", "position"]
        constraints = [models.UniqueConstraint(fields=["batch", "position"], name="batchconfig_unique_position")]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        parts = [self.model, f"effort {self.effort}" if self.effort else "", f"{self.max_turns} turns"]
        return " · ".join(part for part in parts if part)


class BatchRun(models.Model):
    """A planned run of the batch; `run` is set when a concurrency slot lets it launch."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="items")
    task = models.ForeignKey(BatchTask, on_delete=models.CASCADE, related_name="items")
    config = models.ForeignKey(BatchConfig, on_delete=models.CASCADE, related_name="items")
    repeat = models.PositiveSmallIntegerField()
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="batch_item")
    launch_error = models.TextField(blank=True)
    launched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["batch", "id"]
        constraints = [models.UniqueConstraint(fields=["task", "config", "repeat"], name="batchrun_unique_combination")]
        indexes = [
            models.Index(fields=["batch"], condition=Q(run__isnull=True, launch_error=""), name="batchrun_pending")
        ]

    def __str__(self) -> str:
        return f"{self.batch} {self.task.position}/{self.config.position}/{self.repeat}"


class JudgeRound(models.Model):
    """A re-judging of every finished run of a batch; judgments made from `requested_at` belong to it."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveSmallIntegerField()
    # None: each run's own judge_context.
    judge_context = models.JSONField(null=True, blank=True)
    judge_model = models.CharField(max_length=100, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    requested_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["batch", "number"]
        constraints = [models.UniqueConstraint(fields=["batch", "number"], name="judgeround_unique_number")]

    def __str__(self) -> str:
        return f"{self.batch} round {self.number}"


class Truth(models.Model):
    """What an operator found really happened in a run, against the agent's verdict and one judgment of it."""

    class Value(models.TextChoices):
        AGENT_RIGHT = "agent_right", "agent right"
        JUDGE_RIGHT = "judge_right", "judge right"
        BOTH_WRONG = "both_wrong", "both wrong"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="truths")
    judgment = models.OneToOneField(Judgment, on_delete=models.CASCADE, related_name="truth")
    value = models.CharField(max_length=12, choices=Value.choices)
    note = models.TextField(blank=True)
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-recorded_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-recorded_at"], name="truth_ws_recorded")]

    def __str__(self) -> str:
        return f"{self.judgment_id} {self.value}"
