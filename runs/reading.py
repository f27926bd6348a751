"""The runs' read side, one for every door: a workspace's runs found, filtered, paged and shown as /api/v1 shows them
(RunOut). The v1 endpoints, the MCP tools and the v4 adapter call these, so a run reads the same through each door and a
door never calls another door's endpoint functions."""

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Generic, Literal, TypeVar

from django.db.models import Prefetch, Q, QuerySet
from ninja import Field, Schema
from pydantic import StringConstraints

from agent_platform import ids
from agent_platform.api import PATTERN_MEANINGS, Instant, documented_pattern
from agent_platform.errors import InvalidRequest
from agent_platform.lib.money import exact_usd_or_none
from agent_platform.lookup import find
from agent_platform.models import Workspace
from judge.models import latest_judge_verdict

from . import human
from .models import Run, RunInput, Session
from .profiles.models import Profile
from .recipes.models import Replay

Paged = TypeVar("Paged", Run, Session, Profile)

PAGE_DEFAULT = 20
PAGE_MAX = 100


# --- what a run looks like -----------------------------------------------------------------------------------------


class RunErrorOut(Schema):
    code: str
    message: str


class RunUsageOut(Schema):
    requests: int
    total: int
    output: int
    cache_read: int
    cache_write: int
    cost_usd: str = Field(description="Exact decimal string, in US dollars.")


class JudgmentOut(Schema):
    verdict: Literal["pass", "fail", "uncertain"]
    reason: str
    blocked: bool
    impossible: bool
    judged_at: str


class EvaluationUsageOut(Schema):
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    speed: str | None


class EvaluationOut(Schema):
    iteration: int
    result: str | None
    explanation: str
    usage: EvaluationUsageOut


class OutcomeOut(Schema):
    id: str
    description: str
    max_iterations: int
    evaluations: list[EvaluationOut]


class PendingInputOut(Schema):
    id: str = Field(description="The input's id (inp_…): answer it with POST /api/v1/runs/{id}/input.")
    question: str
    secret: bool = Field(description="The answer is masked everywhere, and the agent sees only a placeholder of it.")
    asked_at: datetime


class RunRecipeOut(Schema):
    recipe_id: str
    version: int = Field(description="The recipe version it replays.")
    parameters: dict[str, str]
    replayed_steps: int = Field(description="Steps done without the model.")
    healed_from_step: int | None = Field(description="The step where the model took over; null: none did.")
    why_healed: str | None
    cost_saved_usd: str | None = Field(
        description="The source run's cost less this run's, once it ended (exact decimal string, US dollars)."
    )
    proposed_version: int | None = Field(description="The recipe version this healed run proposed, if any.")


class RunOut(Schema):
    id: str
    session_id: str
    kind: Literal["agent", "sign_in"] = Field(description="agent, or sign_in: a sign-in by hand (no model requests).")
    profile_id: str | None = Field(description="The profile the run's browser started from, if any.")
    save_profile: bool = Field(description="Whether the run writes its final browser state back to its profile.")
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"]
    task: str
    start_url: str
    model: str
    effort: str = Field(description="The effort level asked for; empty for the model's default.")
    thinking: str = Field(description="The thinking mode asked for; empty for the default (adaptive where offered).")
    scripted: bool
    max_turns: int
    max_cost_usd: str | None
    judge: bool
    judge_context: list[str]
    allowed_domains: list[str]
    output_schema: dict[str, Any] | None
    proxy_id: str | None = Field(
        description="The workspace proxy the run's browser goes out through (its session's); null: directly."
    )
    success: bool | None
    output: str
    data: Any = None
    error: RunErrorOut | None
    signals: dict[str, Any]
    usage: RunUsageOut
    judgment: JudgmentOut | None
    outcome: OutcomeOut | None
    metadata: dict[str, Any]
    pending_input: PendingInputOut | None = Field(
        description="The question the agent asked the operator (ask_human) and waits on; null when none."
    )
    paused: bool = Field(description="A person has control: the agent sends no model request until resumed.")
    recipe: RunRecipeOut | None = Field(description="The recipe the run replays (launched with recipe_id); null: none.")
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class RunListOut(Schema):
    runs: list[RunOut]
    next_cursor: str | None
    has_more: bool


# --- reading rows --------------------------------------------------------------------------------------------------


def runs_of(workspace: Workspace) -> QuerySet[Run]:
    """The workspace's runs, with what run_out reads of each selected or prefetched."""
    return (
        Run.objects.for_workspace(workspace)
        .select_related("session", "session__proxy", "outcome", "profile")
        .select_related("replay__recipe", "replay__version", "replay__proposed_version")  # a replay's recipe
        # The judge's records of the run; their own orderings put the latest judgment first and the evaluation cycles
        # in order.
        .prefetch_related(
            "judgments",
            "outcome__evaluations",
            Prefetch("inputs", queryset=RunInput.objects.filter(state=RunInput.State.PENDING), to_attr="pending"),
        )
    )


def outcome_out(run: Run) -> dict[str, Any] | None:
    try:
        outcome = run.outcome
    except Run.outcome.RelatedObjectDoesNotExist:
        return None
    return {
        "id": outcome.public_id,
        "description": outcome.description,
        "max_iterations": outcome.max_iterations,
        "evaluations": [
            {
                "iteration": evaluation.iteration,
                "result": evaluation.result or None,
                "explanation": evaluation.explanation,
                "usage": {
                    "input_tokens": evaluation.input_tokens,
                    "output_tokens": evaluation.output_tokens,
                    "cache_read_input_tokens": evaluation.cache_read_input_tokens,
                    "cache_creation_input_tokens": evaluation.cache_creation_input_tokens,
                    "speed": evaluation.speed,
                },
            }
            for evaluation in outcome.evaluations.all()
        ],
    }


def recipe_of(run: Run) -> dict[str, Any] | None:
    try:
        replay = run.replay  # runs_of selects it with its recipe and versions
    except Replay.DoesNotExist:
        return None
    saved = replay.cost_saved_usd
    return {
        "recipe_id": replay.recipe.public_id,
        "version": replay.version.number,
        "parameters": replay.parameters,
        "replayed_steps": replay.replayed_steps,
        "healed_from_step": replay.healed_from_step,
        "why_healed": replay.why_healed or None,
        "cost_saved_usd": exact_usd_or_none(saved),
        "proposed_version": replay.proposed_version.number if replay.proposed_version else None,
    }


def run_out(run: Run) -> dict[str, Any]:
    """A run as the API returns it (runs_of's prefetches keep a page of these at a fixed number of queries)."""
    judgments = list(run.judgments.all())
    return {
        "id": run.public_id,
        "session_id": run.session.public_id,
        "kind": run.kind,
        "profile_id": run.profile.public_id if run.profile is not None else None,
        "save_profile": run.save_profile,
        "status": run.status,
        "task": run.task,
        "start_url": run.start_url,
        "model": run.model,
        "effort": run.effort,
        "thinking": run.thinking,
        "scripted": run.scripted,
        "max_turns": run.max_turns,
        "max_cost_usd": exact_usd_or_none(run.max_cost_usd),
        "judge": run.judge,
        "judge_context": run.judge_context,
        "allowed_domains": run.allowed_domains,
        # The schema is the session's: a follow-up that named none still answers to it.
        "output_schema": run.session.output_schema,
        "proxy_id": run.session.proxy.public_id if run.session.proxy else None,
        "success": run.success,
        "output": run.output,
        "data": run.data,
        "error": {"code": run.error_code, "message": run.error_message} if run.error_code else None,
        "signals": run.signals,
        "usage": run.usage,
        "judgment": judgments[0].as_dict() if judgments else None,
        "outcome": outcome_out(run),
        "metadata": run.metadata,
        "pending_input": human.pending_input(run),
        "paused": run.is_paused,
        "recipe": recipe_of(run),
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
    }


def reload(workspace: Workspace, run: Run) -> Run:
    """The run read again, as run_out reads it (after a service changed it)."""
    return runs_of(workspace).get(pk=run.pk)


def find_run(workspace: Workspace, run_id: str) -> Run:
    """The workspace's run with this id (as run_out reads it), or not_found."""
    found: Run = find(runs_of(workspace), run_id, "run")
    return found


def run_shown(workspace: Workspace, run: Run) -> dict[str, Any]:
    """A run as the doors return it after a service acted on it: read again, then shown."""
    return run_out(reload(workspace, run))


# --- cursors: opaque, over (created_at, id) so pages stay stable while new rows arrive --------------------------------


# A cursor is the position after a page's last row: its creation instant in microseconds since 1970, a dot, and its
# primary key. Every string of this shape is a position, so the API takes exactly what the document's pattern says.
CURSOR_PATTERN = documented_pattern(r"^[0-9]{1,16}\.[0-9]{1,18}$", "not a cursor this API returned.")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Cursor = Annotated[str, StringConstraints(pattern=CURSOR_PATTERN)]
# A session's id where a filter takes one (a query parameter): refused unless it has the shape ids.session_id makes.
SessionId = Annotated[
    str, StringConstraints(pattern=documented_pattern(ids.public_id_pattern("sess"), "not a session id of this API."))
]


def encode_cursor(row: Run | Session | Profile) -> str:
    return f"{(row.created_at - EPOCH) // timedelta(microseconds=1)}.{row.pk}"


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    """The position a cursor names (16 digits of microseconds stay before year 2287). The v1 schema checks the shape
    first; the v4 API's filters take any string, so it is checked here as well."""
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise InvalidRequest.of_field("cursor", PATTERN_MEANINGS[CURSOR_PATTERN])
    microseconds, pk = cursor.split(".")
    return EPOCH + timedelta(microseconds=int(microseconds)), int(pk)


@dataclass(frozen=True)
class Page(Generic[Paged]):
    """A page of rows, newest first, with the cursor of the next page (None on the last)."""

    rows: list[Paged]
    next_cursor: str | None
    has_more: bool


def paginate(queryset: QuerySet[Paged], cursor: str | None, limit: int) -> Page[Paged]:
    """A page of a queryset ordered newest first by (created_at, id), with the cursor of the next page."""
    queryset = queryset.order_by("-created_at", "-id")
    if cursor:
        created_at, pk = decode_cursor(cursor)
        queryset = queryset.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, pk__lt=pk))
    rows = list(queryset[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, encode_cursor(rows[-1]) if has_more else None, has_more)


# --- runs ----------------------------------------------------------------------------------------------------------


class RunFilters(Schema):
    status: Literal["queued", "running", "succeeded", "failed", "cancelled"] | None = None
    session_id: SessionId | None = None
    verdict: Literal["pass", "fail", "uncertain"] | None = Field(None, description="The latest judgment's verdict.")
    created_after: Instant | None = None
    created_before: Instant | None = None
    cursor: Cursor | None = Field(None, description="next_cursor of the previous page, as it was given.")
    limit: int = Field(PAGE_DEFAULT, ge=1, le=PAGE_MAX)


def list_runs(workspace: Workspace, filters: RunFilters) -> dict[str, Any]:
    """A page of the workspace's runs, newest first, as RunListOut shows it."""
    runs = runs_of(workspace)
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.session_id is not None:
        runs = runs.filter(session__public_id=filters.session_id)
    if filters.verdict:
        runs = runs.annotate(latest_verdict=latest_judge_verdict()).filter(latest_verdict=filters.verdict)
    if created_after := filters.created_after:
        runs = runs.filter(created_at__gt=created_after)
    if created_before := filters.created_before:
        runs = runs.filter(created_at__lt=created_before)
    page = paginate(runs, filters.cursor, filters.limit)
    return {"runs": [run_out(run) for run in page.rows], "next_cursor": page.next_cursor, "has_more": page.has_more}
