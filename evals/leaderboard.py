"""Reading a suite's results: configurations side by side (success with its interval, pass@k, cost per task and per
pass, per level, infrastructure failures apart) and the agreement of each rater with people's labels."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import QuerySet

from agent_platform.models import Workspace
from judge.models import Judgment
from runs.models import Run

from . import stats
from .models import BatchRun, HumanLabel, RuleScore, Suite
from .reports import COUNTED_STATUSES, infrastructure_reason

# A configuration as the leaderboard compares them: model, effort, thinking, max turns, and the judge mode read.
ConfigKey = tuple[str, str, str, int, str]


@dataclass
class Tally:
    """Runs of one configuration (or one level of it), counted honestly: infrastructure failures apart."""

    runs: int = 0
    passes: int = 0
    cost_usd: Decimal = Decimal(0)
    tasks: set[int] = field(default_factory=set)
    infrastructure: list[tuple[Run, str]] = field(default_factory=list)
    by_task: dict[int, list[bool]] = field(default_factory=lambda: defaultdict(list))

    def add(self, run: Run, passed: bool, task_id: int) -> None:
        self.runs += 1
        self.passes += passed
        self.cost_usd += run.cost_usd
        self.tasks.add(task_id)
        self.by_task[task_id].append(passed)

    @property
    def success_rate(self) -> float | None:
        return self.passes / self.runs if self.runs else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return stats.wilson_interval(self.passes, self.runs)

    @property
    def cost_per_task_usd(self) -> Decimal | None:
        return self.cost_usd / len(self.tasks) if self.tasks else None

    @property
    def cost_per_pass_usd(self) -> Decimal | None:
        return self.cost_usd / self.passes if self.passes else None

    def pass_at(self, k: int) -> float | None:
        """pass@k averaged over the tasks that have at least k runs (unbiased per task)."""
        values = [stats.pass_at_k(len(runs), sum(runs), k) for runs in self.by_task.values() if len(runs) >= k]
        known = [value for value in values if value is not None]
        return sum(known) / len(known) if known else None


@dataclass
class Row:
    model: str
    effort: str
    thinking: str
    max_turns: int
    judge_mode: str
    total: Tally = field(default_factory=Tally)
    levels: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    agreement: stats.Agreement | None = None
    k: int = 1

    @property
    def pass_at_k(self) -> float | None:
        return self.total.pass_at(self.k)

    @property
    def by_level(self) -> list[tuple[str, Tally]]:
        """The levels in order, as a list: a template reading `levels.items` would look up a level named "items"."""
        return sorted(self.levels.items())


def latest_by_mode(run_ids: Iterable[int]) -> dict[tuple[int, str], Judgment]:
    """Each run's latest judgment in each judge mode."""
    latest: dict[tuple[int, str], Judgment] = {}
    for judgment in Judgment.objects.filter(run_id__in=list(run_ids)).order_by("judged_at", "id"):
        latest[(judgment.run_id, judgment.mode)] = judgment
    return latest


def suite_items(suite: Suite) -> QuerySet[BatchRun]:
    return BatchRun.objects.filter(batch__suite=suite, run__isnull=False).select_related(
        "run", "config", "batch", "task__suite_task"
    )


def leaderboard(suite: Suite) -> list[Row]:
    """One row per configuration and judge mode over every batch launched from the suite.

    A run passes when the judge (in the row's mode) passed it; an unjudged run counts its agent's own claim. Runs that
    ended on the infrastructure (or that the judge found blocked by the site) are listed apart and left out."""
    items = [(item, item.run) for item in suite_items(suite) if item.run and item.run.status in COUNTED_STATUSES]
    judgments = latest_by_mode(run.pk for _, run in items)
    labels = dict(HumanLabel.objects.filter(run__in=[run for _, run in items]).values_list("run_id", "success"))
    rows: dict[ConfigKey, Row] = {}
    pairs: dict[ConfigKey, list[tuple[bool | None, bool]]] = defaultdict(list)
    for item, run in items:
        config = item.config
        modes = sorted({mode for (run_id, mode) in judgments if run_id == run.pk}) or [item.batch.judge_mode]
        for mode in modes:
            key = (config.model, config.effort, config.thinking, config.max_turns, mode)
            row = rows.get(key)
            if row is None:
                row = rows[key] = Row(*key, k=item.batch.pass_k)
            row.k = max(row.k, item.batch.pass_k)
            judgment = judgments.get((run.pk, mode))
            reason = infrastructure_reason(run, judgment)
            level = item.task.suite_task.level if item.task.suite_task else ""
            if reason is not None:
                row.total.infrastructure.append((run, reason))
                row.levels[level or "-"].infrastructure.append((run, reason))
                continue
            passed = judgment.verdict == "pass" if judgment is not None else run.success is True
            task_id = item.task.suite_task_id or item.task_id
            row.total.add(run, passed, task_id)
            row.levels[level or "-"].add(run, passed, task_id)
            if run.pk in labels and judgment is not None:
                pairs[key].append((verdict_of(judgment), labels[run.pk]))
    for key, row in rows.items():
        row.agreement = stats.agreement(pairs[key]) if pairs[key] else None
    return sorted(rows.values(), key=lambda row: (-(row.total.success_rate or 0), row.model, row.judge_mode))


def verdict_of(judgment: Judgment) -> bool | None:
    return {"pass": True, "fail": False}.get(judgment.verdict)


# --- agreement with people -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RaterAgreement:
    rater: str  # "judge", "rules" or "claim"
    judge_model: str
    judge_mode: str
    agreement: stats.Agreement


@dataclass(frozen=True)
class LabelledRun:
    run: Run
    label: bool
    claim: bool | None
    rules: bool | None
    verdicts: dict[str, bool | None]  # "model/mode": verdict


def labelled_runs(workspace: Workspace, suite: Suite | None = None) -> QuerySet[HumanLabel]:
    labels = HumanLabel.objects.filter(workspace=workspace).select_related("run")
    if suite is not None:
        labels = labels.filter(run__batch_item__batch__suite=suite)
    return labels.order_by("run_id")


def agreement_report(
    workspace: Workspace, suite: Suite | None = None
) -> tuple[list[RaterAgreement], list[LabelledRun]]:
    """Per judge model and mode, for the rule scorer and for the agent's own claim: agreement with the labels.

    Each labelled run counts each rater once: its latest judgment by that model in that mode."""
    labels = list(labelled_runs(workspace, suite))
    run_ids = [label.run_id for label in labels]
    latest: dict[tuple[int, str, str], Judgment] = {}
    for judgment in Judgment.objects.filter(run_id__in=run_ids).order_by("judged_at", "id"):
        latest[(judgment.run_id, judgment.model, judgment.mode)] = judgment
    rules = dict(RuleScore.objects.filter(run_id__in=run_ids).values_list("run_id", "passed"))
    judge_pairs: dict[tuple[str, str], list[tuple[bool | None, bool]]] = defaultdict(list)
    rows: list[LabelledRun] = []
    verdicts_by_run: dict[int, dict[str, bool | None]] = defaultdict(dict)
    for (run_id, model, mode), judgment in latest.items():
        verdicts_by_run[run_id][f"{model}/{mode}"] = verdict_of(judgment)
    by_run = {label.run_id: label for label in labels}
    for (run_id, model, mode), judgment in sorted(latest.items()):
        judge_pairs[(model, mode)].append((verdict_of(judgment), by_run[run_id].success))
    for label in labels:
        rows.append(
            LabelledRun(
                run=label.run,
                label=label.success,
                claim=label.run.success,
                rules=rules.get(label.run_id),
                verdicts=verdicts_by_run[label.run_id],
            )
        )
    report = [
        RaterAgreement("judge", model, mode, stats.agreement(pairs))
        for (model, mode), pairs in sorted(judge_pairs.items())
    ]
    rule_pairs = [(rules[label.run_id], label.success) for label in labels if label.run_id in rules]
    if rule_pairs:
        report.append(RaterAgreement("rules", "", "", stats.agreement(rule_pairs)))
    claim_pairs = [(label.run.success, label.success) for label in labels]
    if claim_pairs:
        report.append(RaterAgreement("claim", "", "", stats.agreement(claim_pairs)))
    return report, rows
