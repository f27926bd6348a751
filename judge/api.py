"""The judge's endpoints under a run: judge a finished run again, and list its judgments. Mounted on the one API
(agent_platform/api.py) beside the runs router, at the same paths and under the same tag and operation ids as when
runs served them, so the API document is unchanged by where they live."""

from typing import Any, Literal

from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict

from agent_platform.api import ApiRequest, ErrorOut
from agent_platform.lookup import find
from runs.api import ERRORS, JudgeContext, RunPathId
from runs.models import Run
from runs.reading import JudgmentOut, RunOut, find_run, run_shown

from .models import Judgment
from .services import request_rejudge

router = Router()


class RejudgeIn(Schema):
    model_config = ConfigDict(extra="forbid")

    judge_context: JudgeContext | None = Field(None, description="Replaces the run's judge_context for this reading.")
    judge_mode: Literal["standard", "key_points"] | None = Field(
        None,
        description="standard reads the agent's verdict and output; key_points writes the task's key points first "
        "and judges from the steps and screenshots only. Default: the mode the run was launched with.",
    )


class JudgmentDetailOut(JudgmentOut):
    judge_context: list[str]
    model: str
    mode: str = Field(description="The judge mode of this reading: standard or key_points.")
    key_points: list[str] = Field(description="The task's key points the key_points mode wrote first.")


class JudgmentListOut(Schema):
    judgments: list[JudgmentDetailOut]


def judgment_out(judgment: Judgment) -> dict[str, Any]:
    return {
        **judgment.as_dict(),
        "judge_context": judgment.judge_context,
        "model": judgment.model,
        "mode": judgment.mode,
        "key_points": judgment.key_points,
    }


@router.post(
    "/runs/{run_id}/rejudge",
    response={202: RunOut, 409: ErrorOut, **ERRORS},
    tags=["runs"],
    summary="Judge a finished run again",
    description="Queues another judge reading, with judge_context replacing the run's if given. Every judgment "
    "is kept; GET /runs/{id}/judgments lists them, latest first.",
    # The id the operation had when runs served it: API clients generated from the document keep their names.
    operation_id="runs_api_rejudge_run",
)
def rejudge_run(request: ApiRequest, run_id: RunPathId, payload: RejudgeIn | None = None) -> Status[dict[str, Any]]:
    run = find_run(request.workspace, run_id)
    body = payload.model_dump(exclude_unset=True) if payload else {}
    # Without judge_context the judge reads the run's own; an explicit list (even empty) replaces it. A refusal is a
    # service error, which the API's one handler answers.
    request_rejudge(run, judge_context=body.get("judge_context"), requested_by=None, mode=body.get("judge_mode"))
    return Status(202, run_shown(request.workspace, run))


@router.get(
    "/runs/{run_id}/judgments",
    response={200: JudgmentListOut, **ERRORS},
    tags=["runs"],
    summary="Judgments, latest first",
    operation_id="runs_api_list_judgments",
)
def list_judgments(request: ApiRequest, run_id: RunPathId) -> dict[str, Any]:
    run: Run = find(Run.objects.for_workspace(request.workspace), run_id, "run")
    judgments = Judgment.objects.filter(run=run).order_by("-judged_at", "-id")
    return {"judgments": [judgment_out(judgment) for judgment in judgments]}
