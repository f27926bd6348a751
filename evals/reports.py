"""Reading evaluations: a batch's statistics per task and configuration (per judging round), the triage queue, and
the judge's calibration from recorded truths. The page and the API both read these."""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.functions import TruncDay, TruncWeek

from agent_platform.models import Workspace
from judge.models import Judgment
from runs.models import Event, Run

from . import stats
from .models import Batch, BatchConfig, BatchRun, BatchTask, JudgeRound, Truth

# A cancelled run says nothing about the task: only these enter the statistics.
COUNTED_STATUSES = (Run.Status.SUCCEEDED, Run.Status.FAILED)
# Endings that say something about the infrastructure, not the agent: counted apart, out of every success rate.
INFRASTRUCTURE_ENDINGS = (
    Run.ErrorCode.BROWSER_ERROR,
    Run.ErrorCode.MODEL_ERROR,
    Run.ErrorCode.WORKER_LOST,
    Run.ErrorCode.TIMEOUT,
)
BLOCKED_BY_SITE = "blocked"


def infrastructure_reason(run: Run, judgment: Judgment | None) -> str | None:
    """Why a finished run is an infrastructure failure (its error code, or "blocked" when the judge found the site
    stood in the way), or None when it says something about the agent."""
    if run.error_code in INFRASTRUCTURE_ENDINGS:
        return str(run.error_code)
    if judgment is not None and judgment.blocked:
        return BLOCKED_BY_SITE
    return None


@dataclass(frozen=True)
class Group:
    task: BatchTask
    config: BatchConfig
    planned: int
    finished: int
    stats: stats.GroupStats
    infrastructure: list[tuple[Run, str]] = field(default_factory=list)


@dataclass(frozen=True)
class VerdictChange:
    run: Run
    before: str | None
    after: str | None


@dataclass(frozen=True)
class BatchReport:
    batch: Batch
    round: int
    rounds: list[JudgeRound]
    groups: list[Group]
    matrix: dict[str, int]
    counts: dict[str, int]
    changes: list[VerdictChange] = field(default_factory=list)
    pass_at_1_before: dict[tuple[int, int], float | None] = field(default_factory=dict)
    infrastructure: list[tuple[Run, str]] = field(default_factory=list)


def round_bounds(rounds: list[JudgeRound], number: int) -> tuple[datetime | None, datetime | None]:
    """The judged_at window of a round: round 0 is the judging at launch, round n starts at its request."""
    starts = {r.number: r.requested_at for r in rounds}
    return starts.get(number), starts.get(number + 1)


def judgments_of_round(run_ids: list[int], rounds: list[JudgeRound], number: int) -> dict[int, Judgment]:
    """The judgment that counts for each run in a round: its latest one made within the round's window."""
    start, end = round_bounds(rounds, number)
    queryset = Judgment.objects.filter(run_id__in=run_ids)
    if start is not None:
        queryset = queryset.filter(judged_at__gte=start)
    if end is not None:
        queryset = queryset.filter(judged_at__lt=end)
    latest: dict[int, Judgment] = {}
    for judgment in queryset.order_by("judged_at", "id"):
        latest[judgment.run_id] = judgment
    return latest


def facts_of(run: Run, judgment: Judgment | None) -> stats.RunFacts:
    turns = (run.signals or {}).get("turns")
    return stats.RunFacts(
        success=run.success,
        turns=turns if isinstance(turns, int) and not isinstance(turns, bool) else None,
        cost_usd=run.cost_usd,
        duration_seconds=stats.duration_between(run.started_at, run.finished_at),
        data=run.data,
        verdict=judgment.verdict if judgment else None,
        blocked=judgment.blocked if judgment else False,
        impossible=judgment.impossible if judgment else False,
    )


def finished_runs(items: list[BatchRun]) -> list[Run]:
    """The items' runs that ended, cancelled ones aside."""
    return [item.run for item in items if item.run is not None and item.run.status in COUNTED_STATUSES]


def counted_runs(items: list[BatchRun], judgments: dict[int, Judgment] | None = None) -> list[Run]:
    """The items' runs that enter the statistics: finished, not cancelled, and not an infrastructure failure."""
    judgments = judgments or {}
    return [run for run in finished_runs(items) if infrastructure_reason(run, judgments.get(run.pk)) is None]


def infrastructure_of(items: list[BatchRun], judgments: dict[int, Judgment]) -> list[tuple[Run, str]]:
    found = [(run, infrastructure_reason(run, judgments.get(run.pk))) for run in finished_runs(items)]
    return [(run, reason) for run, reason in found if reason is not None]


def batch_report(batch: Batch, round_number: int | None = None) -> BatchReport:
    rounds = list(batch.rounds.all())
    number = rounds[-1].number if round_number is None and rounds else (round_number or 0)
    items = list(BatchRun.objects.filter(batch=batch).select_related("run", "task", "config"))
    run_ids = [item.run_id for item in items if item.run_id is not None]
    judgments = judgments_of_round(run_ids, rounds, number)

    by_group: dict[tuple[int, int], list[BatchRun]] = defaultdict(list)
    for item in items:
        by_group[(item.task_id, item.config_id)].append(item)
    groups, all_facts = [], []
    for task in batch.tasks.all():
        for config in batch.configs.all():
            members = by_group[(task.pk, config.pk)]
            facts = [facts_of(run, judgments.get(run.pk)) for run in counted_runs(members, judgments)]
            all_facts.extend(facts)
            groups.append(
                Group(
                    task=task,
                    config=config,
                    planned=len(members),
                    finished=sum(1 for item in members if item.run is not None and item.run.is_finished),
                    stats=stats.group_stats(facts, task.expected),
                    infrastructure=infrastructure_of(members, judgments),
                )
            )
    counts = {
        "planned": len(items),
        "launched": len(run_ids),
        "finished": sum(1 for item in items if item.run is not None and item.run.is_finished),
        "not_launched": sum(1 for item in items if item.launch_error),
        "judged": len(judgments),
    }
    changes: list[VerdictChange] = []
    pass_at_1_before: dict[tuple[int, int], float | None] = {}
    if number > 0:
        before = judgments_of_round(run_ids, rounds, number - 1)
        runs = {item.run_id: item.run for item in items if item.run is not None}
        for run_id, judgment in judgments.items():
            previous = before.get(run_id)
            if previous is None or previous.verdict != judgment.verdict:
                changes.append(VerdictChange(runs[run_id], previous.verdict if previous else None, judgment.verdict))
        for task in batch.tasks.all():
            for config in batch.configs.all():
                members = by_group[(task.pk, config.pk)]
                facts = [facts_of(run, before.get(run.pk)) for run in counted_runs(members, before)]
                pass_at_1_before[(task.pk, config.pk)] = stats.group_stats(facts).pass_at_1
    return BatchReport(
        batch=batch,
        round=number,
        rounds=rounds,
        groups=groups,
        matrix=stats.matrix(fact.cell for fact in all_facts),
        counts=counts,
        changes=changes,
        pass_at_1_before=pass_at_1_before,
        infrastructure=[pair for group in groups for pair in group.infrastructure],
    )


# --- triage --------------------------------------------------------------------------------------------------------

TRIAGE_KINDS = {"overclaim", "underclaim", "uncertain"}


def latest_judgments(workspace: Workspace) -> QuerySet[Judgment]:
    """Each run's latest judgment in the workspace: a re-judging supersedes the reading before it."""
    newer = Judgment.objects.filter(run=OuterRef("run")).filter(
        Q(judged_at__gt=OuterRef("judged_at")) | Q(judged_at=OuterRef("judged_at"), id__gt=OuterRef("id"))
    )
    return Judgment.objects.filter(run__workspace=workspace).exclude(Exists(newer))


KIND_FILTERS = {
    "overclaim": Q(verdict="fail", blocked=False, impossible=False, run__success=True),
    "underclaim": Q(verdict="pass", blocked=False, impossible=False) & ~Q(run__success=True),
    "uncertain": Q(verdict="uncertain"),
}


def triage_queue(
    workspace: Workspace, *, kind: str | None = None, include_resolved: bool = False
) -> QuerySet[Judgment]:
    """Overclaims, underclaims and uncertain judgments across the workspace, newest first."""
    condition = (
        KIND_FILTERS[kind]
        if kind
        else KIND_FILTERS["overclaim"] | KIND_FILTERS["underclaim"] | KIND_FILTERS["uncertain"]
    )
    queryset = latest_judgments(workspace).filter(condition)
    if not include_resolved:
        queryset = queryset.filter(truth__isnull=True)
    return queryset.select_related("run", "truth").order_by("-judged_at", "-id")


def kind_of(judgment: Judgment) -> str | None:
    value = stats.cell(judgment.run.success, judgment.verdict, judgment.blocked, judgment.impossible)
    return value if value in TRIAGE_KINDS else None


def final_screenshot_url(run: Run) -> str | None:
    """The last screenshot the run left: its final view, else the last tool result's."""
    event = (
        Event.objects.filter(
            run=run, type__in=("agent.final_view", "agent.tool_result"), payload__screenshot_url__isnull=False
        )
        .exclude(payload__screenshot_url=None)
        .order_by("-seq")
        .only("payload")
        .first()
    )
    return event.payload.get("screenshot_url") if event else None


# --- calibration ---------------------------------------------------------------------------------------------------

PERIODS = {"day": TruncDay, "week": TruncWeek}


@dataclass(frozen=True)
class CalibrationReport:
    overall: stats.Calibration
    by_model: list[tuple[str, stats.Calibration]]
    by_period: list[tuple[datetime, str, stats.Calibration]]
    period: str


def calibration_report(workspace: Workspace, *, period: str = "week") -> CalibrationReport:
    """The judge's accuracy, false-pass and false-fail rates from the workspace's truths, per judge model and per
    period of judging (the judgment's time, so a change of judge model or prompt shows where it happened)."""
    rows = (
        Truth.objects.filter(workspace=workspace)
        .annotate(period=PERIODS[period]("judgment__judged_at"))
        .values_list("judgment__model", "period", "judgment__verdict", "value")
    )
    pairs_by_model: dict[str, list[tuple[str, str]]] = defaultdict(list)
    pairs_by_period: dict[tuple[datetime, str], list[tuple[str, str]]] = defaultdict(list)
    everything = []
    for model, start, verdict, value in rows:
        model = model or "unknown"
        everything.append((verdict, value))
        pairs_by_model[model].append((verdict, value))
        pairs_by_period[(start, model)].append((verdict, value))
    return CalibrationReport(
        overall=stats.calibration(everything),
        by_model=[(model, stats.calibration(pairs)) for model, pairs in sorted(pairs_by_model.items())],
        by_period=[
            (start, model, stats.calibration(pairs)) for (start, model), pairs in sorted(pairs_by_period.items())
        ],
        period=period,
    )
