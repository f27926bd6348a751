"""Batches of runs (tasks x configurations x repeats), their re-judging rounds, the truths and labels operators record,
the public suites batches are launched from, and each run's rule-based score."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agent_platform.ids import new_public_id
from agent_platform.llm import EFFORT_LEVELS
from agent_platform.models import Workspace
from judge.models import Judgment
from runs.models import Run


def batch_id() -> str:
    return new_public_id("bat")


EFFORT_CHOICES = [("", "default"), *((level, level) for level in EFFORT_LEVELS)]


def suite_id() -> str:
    return new_public_id("sui")


class JudgeMode(models.TextChoices):
    """How the judge reads a run: `standard` reads the agent's verdict and output; `key_points` writes the task's key
    points first and then judges from the steps and screenshots alone, never the agent's own account."""

    STANDARD = "standard"
    KEY_POINTS = "key_points"


class Suite(models.Model):
    """A set of tasks imported from a file in one of the formats the field publishes (or our own JSONL)."""

    class Format(models.TextChoices):
        WEBVOYAGER = "webvoyager"
        ONLINE_MIND2WEB = "online-mind2web"
        WEBARENA = "webarena"
        JSONL = "jsonl"

    public_id = models.CharField(max_length=40, unique=True, default=suite_id, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="suites")
    name = models.CharField(max_length=200)
    format = models.CharField(max_length=20, choices=Format.choices)
    # The site addresses WebArena's placeholders were mapped to at import, as the operator gave them.
    sites = models.JSONField(default=dict, blank=True)
    judge_mode = models.CharField(max_length=12, choices=JudgeMode.choices, default=JudgeMode.STANDARD)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="suite_ws_created")]

    def __str__(self) -> str:
        return self.public_id


class SuiteTask(models.Model):
    """One task of a suite: its id in the suite, where it starts, what it asks, its level and its reference."""

    suite = models.ForeignKey(Suite, on_delete=models.CASCADE, related_name="tasks")
    position = models.PositiveIntegerField()
    external_id = models.CharField(max_length=200)
    intent = models.TextField()
    start_url = models.URLField(max_length=2000, blank=True)
    website = models.CharField(max_length=200, blank=True)
    level = models.CharField(max_length=20, blank=True)
    # {answer, exact_match, must_include[], fuzzy_match[], reference_url, program_html[{url, locator,
    # required_contents}]}: what the rule scorer checks and the suite's own reference answer (evals.scoring).
    reference = models.JSONField(default=dict, blank=True)
    # Extra fields of our own JSONL format, handed to the run as a batch task's are.
    output_schema = models.JSONField(null=True, blank=True)
    judge_context = models.JSONField(default=list, blank=True)
    expected = models.JSONField(null=True, blank=True)
    # A live-site task the operator retired (the site changed): kept, never launched again.
    stale = models.BooleanField(default=False)

    class Meta:
        ordering = ["suite", "position"]
        constraints = [
            models.UniqueConstraint(fields=["suite", "external_id"], name="suitetask_unique_external_id"),
        ]

    def __str__(self) -> str:
        return f"{self.suite} {self.external_id}"


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
    judge_mode = models.CharField(max_length=12, choices=JudgeMode.choices, default=JudgeMode.STANDARD)
    suite = models.ForeignKey(Suite, null=True, blank=True, on_delete=models.SET_NULL, related_name="batches")
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
    suite_task = models.ForeignKey(SuiteTask, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

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
    """One configuration every task of the batch runs with: model, effort, thinking and max_turns."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="configs")
    position = models.PositiveSmallIntegerField()
    model = models.CharField(max_length=100)
    # The launch contract's effort levels (runs.launch_rules.EFFORT_LEVELS, which are llm's), "" for the model's own.
    effort = models.CharField(max_length=10, choices=EFFORT_CHOICES, blank=True)
    thinking = models.CharField(max_length=20, blank=True)
    max_turns = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["batch", "position"]
        constraints = [models.UniqueConstraint(fields=["batch", "position"], name="batchconfig_unique_position")]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        parts = [
            self.model,
            f"effort {self.effort}" if self.effort else "",
            f"thinking {self.thinking}" if self.thinking else "",
            f"{self.max_turns} turns",
        ]
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
    judge_mode = models.CharField(max_length=12, choices=JudgeMode.choices, default=JudgeMode.STANDARD)
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


class RuleScore(models.Model):
    """The rule-based score of a run against its suite task's reference, beside the judge's reading of it.

    `passed` is None when the reference gives no rule to check (a WebVoyager or Online-Mind2Web task)."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="rule_score")
    passed = models.BooleanField(null=True)
    # [{type: exact_match|must_include|fuzzy_match|url_match|program_html, passed, expected, found}]
    checks = models.JSONField(default=list, blank=True)
    scored_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.run} rules {self.passed}"


class HumanLabel(models.Model):
    """A person's reading of whether a run really succeeded: imported from a file or given in triage."""

    class Source(models.TextChoices):
        FILE = "file"
        TRIAGE = "triage"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="human_labels")
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="human_label")
    success = models.BooleanField()
    source = models.CharField(max_length=10, choices=Source.choices)
    note = models.TextField(blank=True)
    recorded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-recorded_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-recorded_at"], name="humanlabel_ws_recorded")]

    def __str__(self) -> str:
        return f"{self.run} {'success' if self.success else 'failure'} ({self.source})"
