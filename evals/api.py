"""The evaluations API: batches and their statistics, re-judging rounds, the triage queue, truths, calibration."""

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictInt, StrictStr

from agent_platform.api import ERROR_RESPONSES, NOT_BLANK, ApiRequest, ErrorOut, PathId, advertised
from agent_platform.errors import NotFound
from agent_platform.lib.money import exact_usd
from agent_platform.lookup import find
from judge.models import Judgment
from runs.api import JudgeContext
from runs.launch_rules import EFFORT_LEVELS
from runs.models import Run

from . import reports, services, stats
from .models import Batch, Truth

router = Router(tags=["evaluations"])
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
BatchPathId = Annotated[str, PathId("batch", "bat")]

ERRORS = ERROR_RESPONSES
LIST_DEFAULT = 20
LIST_MAX = 100


# --- schemas -------------------------------------------------------------------------------------------------------


class BatchTaskIn(Schema):
    model_config = ConfigDict(extra="forbid")

    task: Annotated[StrictStr, advertised(pattern=NOT_BLANK)] = Field(description="What the agent should do.")
    start_url: StrictStr | None = Field(None, description="An http(s) URL the browser opens first.")
    output_schema: dict[str, Any] | None = Field(
        None, description="The object JSON Schema the run's data must satisfy."
    )
    judge_context: list[StrictStr] | None = Field(None, description="At most 8 statements the judge weighs first.")
    expected: Any = Field(None, description="The data a correct run hands back; runs are scored against it.")


class BatchConfigIn(Schema):
    model_config = ConfigDict(extra="forbid")

    model: StrictStr | None = Field(None, description="The model; the platform's default when omitted.")
    effort: Annotated[StrictStr, advertised(enum=list(EFFORT_LEVELS))] | None = Field(
        None, description="One of the model's effort levels (as the launch takes them); the model's own when omitted."
    )
    thinking: StrictStr | None = Field(None, description="A thinking mode the model takes (its profile says which).")
    max_turns: StrictInt | None = Field(None, description="Action turns allowed, 1 to 200 (default 30).")


class BatchIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field("", description="A label for the batch.")
    tasks: list[BatchTaskIn] = Field(min_length=1, max_length=200, description="The suite: one task, or up to 200.")
    configs: list[BatchConfigIn] | None = Field(None, description="Up to 10 configurations; every task runs with each.")
    repeats: StrictInt = Field(1, description="Runs of every task x configuration, 1 to 100.")
    concurrency: StrictInt = Field(
        services.CONCURRENCY_DEFAULT, description="Runs of the batch active at once, 1 to 50."
    )
    judge: StrictBool = Field(True, description="Have the judge read every run.")
    judge_mode: Literal["standard", "key_points"] | None = Field(
        None,
        description="standard reads the agent's verdict; key_points writes the task's key points first and "
        "judges from the steps and screenshots only.",
    )
    pass_k: StrictInt | None = Field(None, description="The k of pass@k shown on the page (default: repeats).")


class BatchOfSessionsIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field("", description="A label for the batch.")
    browser_session_ids: list[StrictStr] = Field(
        min_length=1,
        max_length=services.RUNS_LIMIT,
        description="Browser sessions finished with their client's claim (brs_…): each one's run joins the batch.",
    )


class IntervalOut(Schema):
    low: float
    high: float


class ScoringOut(Schema):
    runs: int
    exact: int = Field(description="Runs whose data equals the expected data.")
    exact_rate: float | None
    fields: dict[str, float | None] = Field(
        description="Per top-level field of the expected data: share of runs matching it."
    )


class MatrixOut(Schema):
    success_pass: int = Field(description="The agent claimed success and the judge passed it.")
    overclaim: int = Field(description="The agent claimed success and the judge failed it.")
    underclaim: int = Field(description="The agent reported failure and the judge passed it.")
    failure_fail: int = Field(description="The agent reported failure and the judge failed it.")
    uncertain: int = Field(description="The judge could not decide (counted apart).")
    blocked_or_impossible: int = Field(description="The judge found the run blocked or the task impossible (apart).")


class GroupOut(Schema):
    task_index: int
    config_index: int
    planned: int
    finished: int
    runs: int = Field(description="Finished runs counted (cancelled runs are not).")
    successes: int = Field(description="Runs the agent itself reported successful.")
    success_rate: float | None
    success_interval: IntervalOut | None = Field(description="Wilson 95% interval of the success rate.")
    judged: int
    passes: int
    pass_at_1: float | None
    pass_k: int
    pass_at_k: float | None = Field(description="Unbiased pass@k of the judge's verdicts, k = pass_k.")
    pass_at: dict[str, float | None] = Field(description="pass@k for every k from 1 to the judged runs.")
    median_turns: float | None
    cost_usd: str
    cost_per_run_usd: str | None
    cost_per_success_usd: str | None = Field(
        description="Cost over the runs the judge passed (the agent's successes where unjudged)."
    )
    median_duration_seconds: float | None
    flaky: bool = Field(description="The outcome varies between runs of this task and configuration.")
    matrix: MatrixOut
    scoring: ScoringOut | None = Field(description="Against the task's expected data, where it gives one.")
    pass_at_1_before: float | None = Field(None, description="pass@1 in the round before this one, when re-judged.")
    infrastructure_failures: int = Field(0, description="Runs counted apart: ended on the infrastructure or blocked.")


class BatchTaskOut(Schema):
    index: int
    task: str
    start_url: str
    output_schema: dict[str, Any] | None
    expected: Any


class BatchConfigOut(Schema):
    index: int
    model: str
    effort: str | None
    thinking: str | None
    max_turns: int


class JudgeRoundOut(Schema):
    number: int
    judge_context: list[str] | None
    judge_model: str
    judge_mode: str
    requested_at: datetime


class VerdictChangeOut(Schema):
    run_id: str
    before: str | None
    after: str | None


class BatchCountsOut(Schema):
    planned: int
    launched: int
    finished: int
    not_launched: int
    judged: int


class InfrastructureOut(Schema):
    run_id: str
    reason: str


class BatchOut(Schema):
    id: str
    name: str
    status: Literal["running", "finished", "cancelled"]
    repeats: int
    concurrency: int
    judge: bool
    judge_mode: str
    suite_id: str | None
    pass_k: int
    created_at: datetime
    finished_at: datetime | None
    counts: BatchCountsOut
    infrastructure: list[InfrastructureOut] = Field(
        description="Runs that ended on the infrastructure (browser_error, model_error, worker_lost, timeout) or "
        "that the judge found blocked by the site: counted apart, out of every rate."
    )
    tasks: list[BatchTaskOut]
    configs: list[BatchConfigOut]
    round: int = Field(description="The judging round these numbers read (0: the judging at launch).")
    rounds: list[JudgeRoundOut]
    groups: list[GroupOut]
    matrix: MatrixOut
    changes: list[VerdictChangeOut] = Field(description="Runs whose verdict differs from the round before.")


class BatchSummaryOut(Schema):
    id: str
    name: str
    status: str
    repeats: int
    created_at: datetime
    finished_at: datetime | None


class BatchListOut(Schema):
    batches: list[BatchSummaryOut]


class BatchRunOut(Schema):
    run_id: str | None
    task_index: int
    config_index: int
    repeat: int
    status: str | None
    success: bool | None
    verdict: str | None
    rule_passed: bool | None = Field(None, description="The rule score beside the judgment (suite runs).")
    launch_error: str | None


class BatchRunListOut(Schema):
    runs: list[BatchRunOut]


class RejudgeBatchIn(Schema):
    model_config = ConfigDict(extra="forbid")

    judge_context: JudgeContext | None = Field(None, description="Replaces each run's judge_context if given.")
    judge_model: StrictStr | None = Field(None, description="Another judge model, where the judge service takes one.")
    judge_mode: Literal["standard", "key_points"] | None = Field(
        None, description="Another judge mode (default: the batch's)."
    )


class TruthIn(Schema):
    model_config = ConfigDict(extra="forbid")

    truth: Literal["agent_right", "judge_right", "both_wrong"]
    note: StrictStr = ""


class TruthOut(Schema):
    judgment_id: int
    truth: str
    note: str
    recorded_at: datetime


class TriageItemOut(Schema):
    judgment_id: int
    kind: Literal["overclaim", "underclaim", "uncertain"]
    run_id: str
    task: str
    agent_success: bool | None
    output: str
    data: Any
    verdict: str
    reason: str
    judge_model: str
    judged_at: datetime
    screenshot_url: str | None
    truth: TruthOut | None


class TriageListOut(Schema):
    items: list[TriageItemOut]


class CalibrationOut(Schema):
    reviewed: int = Field(description="Pass and fail verdicts with a recorded truth.")
    correct: int
    accuracy: float | None
    passes_reviewed: int
    false_passes: int
    false_pass_rate: float | None = Field(description="Of the reviewed pass verdicts, the share found wrong.")
    fails_reviewed: int
    false_fails: int
    false_fail_rate: float | None = Field(description="Of the reviewed fail verdicts, the share found wrong.")
    uncertain_reviewed: int


class ModelCalibrationOut(CalibrationOut):
    judge_model: str


class PeriodCalibrationOut(CalibrationOut):
    period_start: datetime
    judge_model: str


class CalibrationReportOut(Schema):
    period: Literal["day", "week"]
    overall: CalibrationOut
    by_model: list[ModelCalibrationOut]
    by_period: list[PeriodCalibrationOut]


# --- serializers ---------------------------------------------------------------------------------------------------


def money(value: Decimal | None) -> str | None:
    """A statistic's dollars: rounded to 8 places, since a mean is a division."""
    return None if value is None else exact_usd(value, places=8)


def group_out(group: reports.Group, batch: Batch, before: float | None) -> dict[str, Any]:
    s = group.stats
    return {
        "task_index": group.task.position,
        "config_index": group.config.position,
        "planned": group.planned,
        "finished": group.finished,
        "runs": s.runs,
        "successes": s.successes,
        "success_rate": s.success_rate,
        "success_interval": {"low": s.success_interval[0], "high": s.success_interval[1]}
        if s.success_interval
        else None,
        "judged": s.judged,
        "passes": s.passes,
        "pass_at_1": s.pass_at_1,
        "pass_k": batch.pass_k,
        "pass_at_k": s.pass_at_k.get(batch.pass_k),
        "pass_at": {str(k): value for k, value in s.pass_at_k.items()},
        "median_turns": s.median_turns,
        "cost_usd": money(s.cost_usd),
        "cost_per_run_usd": money(s.cost_per_run_usd),
        "cost_per_success_usd": money(s.cost_per_success_usd),
        "median_duration_seconds": s.median_duration_seconds,
        "flaky": s.flaky,
        "matrix": s.matrix,
        "scoring": s.scoring.__dict__ if s.scoring else None,
        "pass_at_1_before": before,
        "infrastructure_failures": len(group.infrastructure),
    }


def batch_out(report: reports.BatchReport) -> dict[str, Any]:
    batch = report.batch
    return {
        "id": batch.public_id,
        "name": batch.name,
        "status": batch.status,
        "repeats": batch.repeats,
        "concurrency": batch.concurrency,
        "judge": batch.judge,
        "judge_mode": batch.judge_mode,
        "suite_id": batch.suite.public_id if batch.suite else None,
        "pass_k": batch.pass_k,
        "created_at": batch.created_at,
        "finished_at": batch.finished_at,
        "counts": report.counts,
        "infrastructure": [{"run_id": run.public_id, "reason": reason} for run, reason in report.infrastructure],
        "tasks": [
            {
                "index": t.position,
                "task": t.task,
                "start_url": t.start_url,
                "output_schema": t.output_schema,
                "expected": t.expected,
            }
            for t in batch.tasks.all()
        ],
        "configs": [
            {
                "index": c.position,
                "model": c.model,
                "effort": c.effort or None,
                "thinking": c.thinking or None,
                "max_turns": c.max_turns,
            }
            for c in batch.configs.all()
        ],
        "round": report.round,
        "rounds": [
            {
                "number": r.number,
                "judge_context": r.judge_context,
                "judge_model": r.judge_model,
                "judge_mode": r.judge_mode,
                "requested_at": r.requested_at,
            }
            for r in report.rounds
        ],
        "groups": [group_out(g, batch, report.pass_at_1_before.get((g.task.pk, g.config.pk))) for g in report.groups],
        "matrix": report.matrix,
        "changes": [{"run_id": c.run.public_id, "before": c.before, "after": c.after} for c in report.changes],
    }


def truth_out(truth: Truth) -> dict[str, Any]:
    return {
        "judgment_id": truth.judgment_id,
        "truth": truth.value,
        "note": truth.note,
        "recorded_at": truth.recorded_at,
    }


def calibration_out(value: stats.Calibration, **extra: object) -> dict[str, Any]:
    return {**value.__dict__, **extra}


def rule_passed(run: Run | None) -> bool | None:
    score = getattr(run, "rule_score", None) if run is not None else None
    return score.passed if score is not None else None


def find_batch(request: ApiRequest, batch_id: str) -> Batch:
    return find(Batch.objects.for_workspace(request.workspace), batch_id, "batch")


# --- batches -------------------------------------------------------------------------------------------------------


@router.post(
    "/batches",
    response={201: BatchOut, **ERRORS},
    summary="Launch a batch",
    description="Every task x configuration x repeat becomes a run; at most `concurrency` of them are active at "
    "once, the next launching as one finishes.",
)
def create_batch(request: ApiRequest, payload: BatchIn) -> Status[dict[str, Any]]:
    body = payload.model_dump(exclude_unset=True)
    body["tasks"] = [{k: v for k, v in item.items() if v is not None} for item in body["tasks"]]
    if body.get("configs"):
        body["configs"] = [{k: v for k, v in item.items() if v is not None} for item in body["configs"]]
    batch = services.create_batch(request.workspace, **body)
    return Status(201, batch_out(reports.batch_report(batch)))


@router.post(
    "/batches/of-browser-sessions",
    response={201: BatchOut, 409: ErrorOut, **ERRORS},
    summary="A batch of finished browser sessions",
    description="Your own agent's sessions, finished with its claim (POST /browsers/{id}/finish), as one batch: a "
    "task per distinct task, one configuration (model `external`), nothing launched. Judge them all with "
    "POST /batches/{id}/rejudge.",
)
def create_batch_of_sessions(request: ApiRequest, payload: BatchOfSessionsIn) -> Status[dict[str, Any]]:
    batch = services.batch_of_sessions(
        request.workspace, browser_session_ids=payload.browser_session_ids, name=payload.name
    )
    return Status(201, batch_out(reports.batch_report(batch)))


@router.get("/batches", response={200: BatchListOut, **ERRORS}, summary="List batches, newest first")
def list_batches(request: ApiRequest, limit: int = Query(LIST_DEFAULT, ge=1, le=LIST_MAX)) -> dict[str, Any]:  # type: ignore[type-arg]  # ninja types its Query()/Header() defaults as generic
    batches = Batch.objects.for_workspace(request.workspace)[:limit]
    return {
        "batches": [
            {"id": b.public_id, "name": b.name, "status": b.status, "repeats": b.repeats, "created_at": b.created_at,
             "finished_at": b.finished_at}
            for b in batches
        ]
    }  # fmt: skip


@router.get(
    "/batches/{batch_id}",
    response={200: BatchOut, **ERRORS},
    summary="A batch and its statistics",
    description="Per task and configuration: success rate with its Wilson 95% interval, pass@1 and pass@k by the "
    "judge, median turns and duration, cost per run and per successful run, flakiness, scoring against expected "
    "data; and the claim-versus-judge matrix. `round` picks a re-judging round (default: the latest).",
)
def get_batch(
    request: ApiRequest,
    batch_id: BatchPathId,
    round: int | None = Query(None, ge=0, le=1000),  # type: ignore[type-arg]  # ninja types its Query()/Header() defaults as generic
) -> dict[str, Any]:
    batch = find_batch(request, batch_id)
    if round is not None and round > 0 and not batch.rounds.filter(number=round).exists():
        raise NotFound(f"Batch {batch_id} has no judging round {round}.")
    return batch_out(reports.batch_report(batch, round))


@router.get("/batches/{batch_id}/runs", response={200: BatchRunListOut, **ERRORS}, summary="The runs of a batch")
def batch_runs(request: ApiRequest, batch_id: BatchPathId) -> dict[str, Any]:
    batch = find_batch(request, batch_id)
    items = batch.items.select_related("run", "task", "config", "run__rule_score")
    latest = {
        j.run_id: j.verdict for j in reports.latest_judgments(request.workspace).filter(run__batch_item__batch=batch)
    }
    return {
        "runs": [
            {
                "run_id": item.run.public_id if item.run else None,
                "task_index": item.task.position,
                "config_index": item.config.position,
                "repeat": item.repeat,
                "status": item.run.status if item.run else None,
                "success": item.run.success if item.run else None,
                "verdict": latest.get(item.run_id) if item.run_id is not None else None,
                "rule_passed": rule_passed(item.run),
                "launch_error": item.launch_error or None,
            }
            for item in items
        ]
    }


@router.post("/batches/{batch_id}/cancel", response={200: BatchOut, **ERRORS}, summary="Cancel a batch")
def cancel_batch(request: ApiRequest, batch_id: BatchPathId) -> dict[str, Any]:
    batch = services.cancel_batch(find_batch(request, batch_id))
    return batch_out(reports.batch_report(batch))


@router.post(
    "/batches/{batch_id}/rejudge",
    response={202: BatchOut, 409: ErrorOut, **ERRORS},
    summary="Re-judge every run of a batch",
    description="Starts a new judging round over the batch's finished runs, with an edited judge_context (or each "
    "run's own). GET the batch with ?round=N (or the latest by default) to compare: `changes` lists the runs "
    "whose verdict moved, and each group's `pass_at_1_before` the round before.",
)
def rejudge_batch(
    request: ApiRequest, batch_id: BatchPathId, payload: RejudgeBatchIn | None = None
) -> Status[dict[str, Any]]:
    batch = find_batch(request, batch_id)
    body = payload.model_dump(exclude_unset=True) if payload else {}
    services.rejudge_batch(batch, **body)
    return Status(202, batch_out(reports.batch_report(batch)))


# --- triage, truths and calibration --------------------------------------------------------------------------------


@router.get(
    "/triage",
    response={200: TriageListOut, **ERRORS},
    summary="The triage queue",
    description="Overclaims (agent success, judge fail), underclaims (agent failure, judge pass) and uncertain "
    "judgments across the workspace, newest first; each run's latest judgment only. Without include_resolved, "
    "only those with no truth recorded yet.",
)
def triage(
    request: ApiRequest,
    kind: Literal["overclaim", "underclaim", "uncertain"] | None = None,
    include_resolved: bool = False,
    limit: int = Query(LIST_DEFAULT, ge=1, le=LIST_MAX),  # type: ignore[type-arg]  # ninja types its Query()/Header() defaults as generic
) -> dict[str, Any]:
    judgments = reports.triage_queue(request.workspace, kind=kind, include_resolved=include_resolved)[:limit]
    items = []
    for judgment in judgments:
        run = judgment.run
        truth = getattr(judgment, "truth", None)
        items.append(
            {
                "judgment_id": judgment.pk,
                "kind": reports.kind_of(judgment),
                "run_id": run.public_id,
                "task": run.task,
                "agent_success": run.success,
                "output": run.output,
                "data": run.data,
                "verdict": judgment.verdict,
                "reason": judgment.reason,
                "judge_model": judgment.model,
                "judged_at": judgment.judged_at,
                "screenshot_url": reports.final_screenshot_url(run),
                "truth": truth_out(truth) if truth is not None else None,
            }
        )
    return {"items": items}


@router.post(
    "/judgments/{judgment_id}/truth",
    response={200: TruthOut, **ERRORS},
    summary="Record the truth of a judged run",
    description="agent_right, judge_right or both_wrong, with a note; recording again replaces it. Calibration "
    "reads these.",
)
def record_truth(request: ApiRequest, judgment_id: int, payload: TruthIn) -> dict[str, Any]:
    judgment = Judgment.objects.filter(pk=judgment_id, run__workspace=request.workspace).first()
    if judgment is None:
        raise NotFound(f"No judgment {judgment_id} in this workspace.")
    truth = services.record_truth(request.workspace, judgment, value=payload.truth, note=payload.note)
    return truth_out(truth)


@router.get(
    "/calibration",
    response={200: CalibrationReportOut, **ERRORS},
    summary="The judge's calibration",
    description="From recorded truths: accuracy, false-pass and false-fail rates overall, per judge model, and "
    "per day or week of judging.",
)
def calibration(request: ApiRequest, period: Literal["day", "week"] = "week") -> dict[str, Any]:
    report = reports.calibration_report(request.workspace, period=period)
    return {
        "period": report.period,
        "overall": calibration_out(report.overall),
        "by_model": [calibration_out(value, judge_model=model) for model, value in report.by_model],
        "by_period": [
            calibration_out(value, period_start=start, judge_model=model) for start, model, value in report.by_period
        ],
    }
