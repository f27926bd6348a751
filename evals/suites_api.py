"""The suites API: importing a public suite (a file, multipart or JSON), its tasks and retiring them, launching a batch
over it, its leaderboard; people's labels (a file, or one run from triage), a random sample for triage, and the
agreement of the judge, the rule scorer and the agent's claim with those labels (JSON or CSV)."""

import csv
import io
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from django.http import HttpResponse
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError
from pydantic import ConfigDict, StrictBool, StrictInt, StrictStr

from agent_platform.api import ERROR_RESPONSES, ApiRequest, PathId
from agent_platform.errors import InvalidRequest, NotFound
from agent_platform.lookup import find
from runs.api import RunPathId
from runs.models import Run

from . import labels as label_service
from . import leaderboard as boards
from . import reports, services, stats, suites
from .api import BatchConfigIn, BatchOut, batch_out, money
from .models import Suite, SuiteTask

router = Router(tags=["suites"])
SuitePathId = Annotated[str, PathId("suite", "sui")]
ERRORS = ERROR_RESPONSES
Format = Literal["webvoyager", "online-mind2web", "webarena", "jsonl"]
JudgeModeIn = Literal["standard", "key_points"]


# --- schemas -------------------------------------------------------------------------------------------------------


class SuiteIn(Schema):
    model_config = ConfigDict(extra="forbid")

    format: Format = Field(description="The file's format.")
    content: StrictStr = Field(description="The file's text: JSON Lines, a JSON array, or one JSON object.")
    name: StrictStr = Field("", description="A label for the suite (default: the format's).")
    sites: dict[str, StrictStr] | None = Field(
        None, description='WebArena\'s placeholders and the addresses they stand for: {"__SHOPPING__": "http://…"}.'
    )
    judge_mode: JudgeModeIn | None = Field(None, description="The judge mode its batches use unless they say.")


class SkippedOut(Schema):
    line: int
    external_id: str
    reason: str


class SuiteTaskOut(Schema):
    external_id: str
    intent: str
    start_url: str
    website: str
    level: str
    reference: dict[str, Any]
    stale: bool


class SuiteCreatedOut(Schema):
    id: str
    name: str
    format: str
    tasks: int = Field(description="Tasks imported.")
    skipped: list[SkippedOut] = Field(description="Tasks left out, with the reason (an unmapped placeholder).")


class SuiteOut(Schema):
    id: str
    name: str
    format: str
    judge_mode: str
    sites: dict[str, str]
    created_at: datetime
    tasks: list[SuiteTaskOut]


class SuiteSummaryOut(Schema):
    id: str
    name: str
    format: str
    judge_mode: str
    tasks: int
    stale: int
    created_at: datetime


class SuiteListOut(Schema):
    suites: list[SuiteSummaryOut]


class SuiteTaskPatchIn(Schema):
    model_config = ConfigDict(extra="forbid")

    external_id: StrictStr = Field(description="The task's id in the suite.")
    stale: StrictBool = Field(description="Retire the task (true: never launched again) or bring it back.")


class SuiteLaunchIn(Schema):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = ""
    configs: list[BatchConfigIn] | None = Field(None, description="Up to 10 configurations; every task runs with each.")
    repeats: StrictInt = 1
    concurrency: StrictInt = services.CONCURRENCY_DEFAULT
    judge: StrictBool = True
    judge_mode: JudgeModeIn | None = Field(None, description="standard or key_points (default: the suite's).")
    pass_k: StrictInt | None = None
    task_ids: list[StrictStr] | None = Field(None, description="Only these tasks (by external_id); stale ones never.")


class IntervalOut(Schema):
    low: float
    high: float


class AgreementOut(Schema):
    n: int = Field(description="Labelled runs the rater decided.")
    agree: int
    percent_agreement: float | None
    kappa: float | None = Field(description="Cohen's kappa; None when both always said the same one thing.")
    kappa_interval: IntervalOut | None = Field(description="Its large-sample 95% interval.")
    rater_success_rate: float | None
    human_success_rate: float | None
    success_rate_gap: float | None = Field(description="The rater's success rate minus the people's.")
    matrix: dict[str, int] = Field(description="both_success, rater_only, person_only, both_failure.")
    undecided: int = Field(description="Labelled runs the rater gave no decision on (uncertain, no rule).")


class InfrastructureRunOut(Schema):
    run_id: str
    reason: str


class TallyOut(Schema):
    runs: int = Field(description="Runs counted: infrastructure failures are not.")
    passes: int
    success_rate: float | None
    success_interval: IntervalOut | None = Field(description="Wilson 95% interval.")
    tasks: int
    cost_usd: str
    cost_per_task_usd: str | None
    cost_per_pass_usd: str | None
    infrastructure_failures: int
    infrastructure: list[InfrastructureRunOut]


class LevelOut(TallyOut):
    level: str


class LeaderboardRowOut(Schema):
    model: str
    effort: str | None
    thinking: str | None
    max_turns: int
    judge_mode: str
    total: TallyOut
    pass_k: int
    pass_at_k: float | None
    levels: list[LevelOut]
    agreement: AgreementOut | None = Field(description="The judge's agreement with people on this row's runs.")


class LeaderboardOut(Schema):
    suite_id: str
    rows: list[LeaderboardRowOut]


class LabelsIn(Schema):
    model_config = ConfigDict(extra="forbid")

    content: StrictStr = Field(
        description="JSON Lines, a JSON array or object, or CSV of {run_id or external_id, success}."
    )
    batch_id: StrictStr | None = Field(None, description="The batch whose runs external_id/task_id labels belong to.")
    agent: StrictStr | None = Field(None, description="In Online-Mind2Web's human_label file: the agent's column.")


class LabelsOut(Schema):
    imported: int
    skipped: list[dict[str, Any]]


class LabelIn(Schema):
    model_config = ConfigDict(extra="forbid")

    success: StrictBool
    note: StrictStr = ""


class LabelOut(Schema):
    run_id: str
    success: bool
    source: str
    note: str
    recorded_at: datetime


class SampleItemOut(Schema):
    run_id: str
    task: str
    status: str
    agent_success: bool | None
    output: str
    verdict: str | None
    screenshot_url: str | None


class SampleOut(Schema):
    items: list[SampleItemOut]


class RaterOut(AgreementOut):
    rater: Literal["judge", "rules", "claim"]
    judge_model: str
    judge_mode: str


class AgreementReportOut(Schema):
    raters: list[RaterOut]
    runs: list[dict[str, Any]]


# --- helpers -------------------------------------------------------------------------------------------------------


def find_suite(request: ApiRequest, suite_id: str) -> Suite:
    return find(Suite.objects.filter(workspace=request.workspace), suite_id, "suite")


def interval_out(value: tuple[float, float] | None) -> dict[str, float] | None:
    return {"low": value[0], "high": value[1]} if value else None


def agreement_out(value: stats.Agreement) -> dict[str, Any]:
    return {**value.__dict__, "kappa_interval": interval_out(value.kappa_interval)}


def tally_out(tally: boards.Tally) -> dict[str, Any]:
    return {
        "runs": tally.runs,
        "passes": tally.passes,
        "success_rate": tally.success_rate,
        "success_interval": interval_out(tally.interval),
        "tasks": len(tally.tasks),
        "cost_usd": money(tally.cost_usd),
        "cost_per_task_usd": money(tally.cost_per_task_usd),
        "cost_per_pass_usd": money(tally.cost_per_pass_usd),
        "infrastructure_failures": len(tally.infrastructure),
        "infrastructure": [{"run_id": run.public_id, "reason": reason} for run, reason in tally.infrastructure],
    }


def task_out(task: SuiteTask) -> dict[str, Any]:
    return {
        "external_id": task.external_id,
        "intent": task.intent,
        "start_url": task.start_url,
        "website": task.website,
        "level": task.level,
        "reference": task.reference,
        "stale": task.stale,
    }


def suite_body(request: ApiRequest) -> dict[str, Any]:
    """The import's fields from a multipart form (a part named `file`; `sites` as JSON text) or a JSON body."""
    content_type = request.META.get("CONTENT_TYPE", "").lower()
    if content_type.startswith("multipart/form-data"):
        try:
            upload = request.FILES.get("file")
        except HttpError:
            raise InvalidRequest("The multipart body could not be read.") from None
        if upload is None:
            raise InvalidRequest.of_field("file", "a multipart part named 'file' is required")
        # format is always passed on, so a form without it is refused by the import naming it
        body: dict[str, Any] = {"format": request.POST.get("format", "")}
        body.update({key: request.POST[key] for key in ("name", "judge_mode") if request.POST.get(key)})
        body["content"] = upload.read(suites.SUITE_FILE_MAX_BYTES + 1)
        if request.POST.get("sites"):
            try:
                body["sites"] = json.loads(request.POST["sites"])
            except ValueError as error:
                raise InvalidRequest.of_field("sites", f"is not JSON: {error}") from None
        return body
    try:
        payload = SuiteIn.model_validate_json(request.body or b"{}")
    except ValueError as error:
        raise InvalidRequest(
            "The body must be JSON {format, content, name, sites, judge_mode}.", detail=str(error)[:500]
        ) from None
    return payload.model_dump(exclude_none=True)


SUITE_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": SuiteIn.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "format"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "format": {"type": "string", "enum": ["webvoyager", "online-mind2web", "webarena", "jsonl"]},
                        "name": {"type": "string"},
                        "sites": {"type": "string", "description": "JSON object of placeholder to address."},
                        "judge_mode": {"type": "string", "enum": ["standard", "key_points"]},
                    },
                }
            },
        },
    }
}


# --- suites --------------------------------------------------------------------------------------------------------


@router.post(
    "/suites",
    response={201: SuiteCreatedOut, **ERRORS},
    summary="Import a suite",
    description="A WebVoyager, Online-Mind2Web, WebArena or our own JSONL file, as multipart (a part named `file`) or "
    "JSON {format, content}. WebArena's site placeholders map to the `sites` given; a task naming one without an "
    "address is skipped with the reason. A malformed file is refused naming its line and field; nothing is imported "
    "then.",
    openapi_extra=SUITE_OPENAPI,
)
def import_suite(request: ApiRequest) -> Status[dict[str, Any]]:
    body = suite_body(request)
    result = suites.import_suite(request.workspace, **body)
    suite = result.suite
    return Status(
        201,
        {
            "id": suite.public_id,
            "name": suite.name,
            "format": suite.format,
            "tasks": suite.tasks.count(),
            "skipped": [skipped.__dict__ for skipped in result.skipped],
        },
    )


@router.get("/suites", response={200: SuiteListOut, **ERRORS}, summary="List suites, newest first")
def list_suites(request: ApiRequest) -> dict[str, Any]:
    rows = []
    for suite in Suite.objects.filter(workspace=request.workspace)[:100]:
        tasks = list(suite.tasks.values_list("stale", flat=True))
        rows.append(
            {
                "id": suite.public_id,
                "name": suite.name,
                "format": suite.format,
                "judge_mode": suite.judge_mode,
                "tasks": len(tasks),
                "stale": sum(tasks),
                "created_at": suite.created_at,
            }
        )
    return {"suites": rows}


@router.get("/suites/{suite_id}", response={200: SuiteOut, **ERRORS}, summary="A suite and its tasks")
def get_suite(request: ApiRequest, suite_id: SuitePathId) -> dict[str, Any]:
    suite = find_suite(request, suite_id)
    return {
        "id": suite.public_id,
        "name": suite.name,
        "format": suite.format,
        "judge_mode": suite.judge_mode,
        "sites": suite.sites,
        "created_at": suite.created_at,
        "tasks": [task_out(task) for task in suite.tasks.all()],
    }


@router.patch(
    "/suites/{suite_id}/tasks",
    response={200: SuiteTaskOut, **ERRORS},
    summary="Retire a suite's task, or bring it back",
    description="A retired (stale) task is kept but never launched again: a live site's task whose answer changed.",
)
def patch_suite_task(request: ApiRequest, suite_id: SuitePathId, payload: SuiteTaskPatchIn) -> dict[str, Any]:
    suite = find_suite(request, suite_id)
    task = suite.tasks.filter(external_id=payload.external_id).first()
    if task is None:
        raise NotFound(f"Suite {suite_id} has no task '{payload.external_id[:200]}'.")
    return task_out(suites.set_stale(task, payload.stale))


@router.post(
    "/suites/{suite_id}/batches",
    response={201: BatchOut, **ERRORS},
    summary="Launch a batch over a suite",
    description="Every task that is not stale (or those `task_ids` names) x configuration x repeat becomes a run, "
    "launched as batches are; each run is judged in the judge mode chosen and scored by its reference's rules.",
)
def launch_suite(request: ApiRequest, suite_id: SuitePathId, payload: SuiteLaunchIn) -> Status[dict[str, Any]]:
    suite = find_suite(request, suite_id)
    body = payload.model_dump(exclude_unset=True)
    if body.get("configs"):
        body["configs"] = [{k: v for k, v in item.items() if v is not None} for item in body["configs"]]
    batch = services.launch_suite(suite, **body)
    return Status(201, batch_out(reports.batch_report(batch)))


@router.get(
    "/suites/{suite_id}/leaderboard",
    response={200: LeaderboardOut, **ERRORS},
    summary="A suite's leaderboard",
    description="Configurations side by side (model, effort, thinking, max turns, judge mode) over every batch of "
    "the suite: success with its Wilson interval, pass@k, cost per task and per pass, per level; infrastructure "
    "failures counted apart and listed; the judge's agreement with people's labels.",
)
def suite_leaderboard(request: ApiRequest, suite_id: SuitePathId) -> dict[str, Any]:
    suite = find_suite(request, suite_id)
    return {
        "suite_id": suite.public_id,
        "rows": [
            {
                "model": row.model,
                "effort": row.effort or None,
                "thinking": row.thinking or None,
                "max_turns": row.max_turns,
                "judge_mode": row.judge_mode,
                "total": tally_out(row.total),
                "pass_k": row.k,
                "pass_at_k": row.pass_at_k,
                "levels": [{"level": level, **tally_out(tally)} for level, tally in row.by_level],
                "agreement": agreement_out(row.agreement) if row.agreement else None,
            }
            for row in boards.leaderboard(suite)
        ],
    }


# --- labels and agreement ------------------------------------------------------------------------------------------


@router.post(
    "/labels",
    response={200: LabelsOut, **ERRORS},
    summary="Import people's labels",
    description="{run_id or external_id, success} records (JSON Lines, JSON or CSV); external_id (or "
    "Online-Mind2Web's task_id) needs `batch_id`. Online-Mind2Web's human_label shape is read with `agent` naming "
    "the column; its 2 (not executable) is skipped. All or nothing.",
)
def import_labels(request: ApiRequest, payload: LabelsIn) -> dict[str, Any]:
    result = label_service.import_labels(request.workspace, **payload.model_dump(exclude_none=True))
    return {"imported": result.imported, "skipped": result.skipped}


@router.post("/runs/{run_id}/label", response={200: LabelOut, **ERRORS}, summary="Label a run as a person saw it")
def label_run(request: ApiRequest, run_id: RunPathId, payload: LabelIn) -> dict[str, Any]:
    run = find(Run.objects.for_workspace(request.workspace), run_id, "run")
    label = services.record_label(request.workspace, run, success=payload.success, note=payload.note)
    return {
        "run_id": run.public_id,
        "success": label.success,
        "source": label.source,
        "note": label.note,
        "recorded_at": label.recorded_at,
    }


@router.get(
    "/triage/sample",
    response={200: SampleOut, **ERRORS},
    summary="A random sample of judged runs to label",
    description="Unlabelled finished runs with a judgment, drawn at random whatever the agent and the judge said "
    "(`seed` makes the draw repeatable): labels of a random sample estimate agreement without the bias of reviewing "
    "only disagreements.",
)
def triage_sample(
    request: ApiRequest,
    size: int = Query(10, ge=1, le=label_service.SAMPLE_MAX),  # type: ignore[type-arg]  # ninja types its Query()/Header() defaults as generic
    seed: str | None = None,
) -> dict[str, Any]:
    runs = label_service.random_sample(request.workspace, size=size, seed=seed)
    verdicts = {
        j.run_id: j.verdict for j in reports.latest_judgments(request.workspace).filter(run__in=[r.pk for r in runs])
    }
    return {
        "items": [
            {
                "run_id": run.public_id,
                "task": run.task,
                "status": run.status,
                "agent_success": run.success,
                "output": run.output,
                "verdict": verdicts.get(run.pk),
                "screenshot_url": reports.final_screenshot_url(run),
            }
            for run in runs
        ]
    }


CSV_COLUMNS = [
    "rater",
    "judge_model",
    "judge_mode",
    "n",
    "agree",
    "percent_agreement",
    "kappa",
    "kappa_low",
    "kappa_high",
    "rater_success_rate",
    "human_success_rate",
    "success_rate_gap",
    "both_success",
    "rater_only",
    "person_only",
    "both_failure",
    "undecided",
]


def agreement_csv(raters: list[boards.RaterAgreement]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for row in raters:
        a = row.agreement
        low, high = a.kappa_interval or (None, None)
        writer.writerow(
            [row.rater, row.judge_model, row.judge_mode, a.n, a.agree, a.percent_agreement, a.kappa, low, high,
             a.rater_success_rate, a.human_success_rate, a.success_rate_gap, a.matrix["both_success"],
             a.matrix["rater_only"], a.matrix["person_only"], a.matrix["both_failure"], a.undecided]
        )  # fmt: skip
    return out.getvalue()


@router.get(
    "/agreement",
    response={200: AgreementReportOut, **ERRORS},
    summary="Agreement with people",
    description="Per judge model and mode, for the rule scorer and for the agent's own claim, over the labelled "
    "runs (of a suite with `suite_id`): percent agreement, Cohen's kappa with its 95% interval, the success-rate "
    "gap (rater minus people) and the confusion matrix. `format=csv` gives the raters as CSV.",
    openapi_extra={"responses": {200: {"content": {"text/csv": {"schema": {"type": "string"}}}}}},
)
def agreement(
    request: ApiRequest, suite_id: str | None = None, format: Literal["json", "csv"] = "json"
) -> dict[str, Any] | HttpResponse:
    suite = find_suite(request, suite_id) if suite_id else None
    raters, runs = boards.agreement_report(request.workspace, suite)
    if format == "csv":
        response = HttpResponse(agreement_csv(raters), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="agreement.csv"'
        return response
    return {
        "raters": [
            {"rater": r.rater, "judge_model": r.judge_model, "judge_mode": r.judge_mode, **agreement_out(r.agreement)}
            for r in raters
        ],
        "runs": [
            {"run_id": row.run.public_id, "label": row.label, "claim": row.claim, "rules": row.rules,
             "verdicts": row.verdicts}
            for row in runs
        ],
    }  # fmt: skip
