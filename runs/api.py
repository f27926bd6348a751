"""The runs API: launch, list, read and cancel runs, read their events, and their sessions. (Re-judging and the
judgments list are the judge's endpoints, in judge/api.py.)"""

import dataclasses
from datetime import datetime
from typing import Annotated, Any

from django.conf import settings
from django.db.models import Count
from django.http import HttpResponse
from ninja import Field, Header, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr, StringConstraints

from agent_platform import ids
from agent_platform.api import (
    ERROR_RESPONSES,
    NOT_BLANK,
    ApiRequest,
    ErrorOut,
    PathId,
    advertised,
    documented_pattern,
)
from agent_platform.errors import InvalidRequest
from agent_platform.lib.text import stripped_text_pattern
from agent_platform.lookup import UUID_ID, find
from judge.services import JUDGE_CONTEXT_MAX_CHARS, JUDGE_CONTEXT_MAX_STATEMENTS

from . import human, reading
from .launch import launch
from .launch_rules import TASK_MAX_CHARS, LaunchRequest
from .lifecycle import request_cancel
from .models import Event, Run, Session
from .queueing import depth
from .reading import (
    PAGE_DEFAULT,
    PAGE_MAX,
    Cursor,
    RunFilters,
    RunListOut,
    RunOut,
    find_run,
    paginate,
    run_out,
    run_shown,
)
from .recipes.services import launch_replay

router = Router()
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
RunPathId = Annotated[str, PathId("run", "run", (UUID_ID.pattern,))]
SessionPathId = Annotated[str, PathId("session", "sess", (UUID_ID.pattern,))]

EVENTS_DEFAULT = 100
EVENTS_MAX = 1000
SEQ_MAX = 2**31 - 1


# The statements a judge weighs first: as many and as long as judging.services.clean_judge_context takes, each
# non-blank once stripped.
JudgeStatement = Annotated[
    StrictStr,
    StringConstraints(
        pattern=documented_pattern(
            stripped_text_pattern(JUDGE_CONTEXT_MAX_CHARS),
            f"must be 1 to {JUDGE_CONTEXT_MAX_CHARS} characters, not only white space",
        )
    ),
]
JudgeContext = Annotated[list[JudgeStatement], Field(max_length=JUDGE_CONTEXT_MAX_STATEMENTS)]


# --- schemas -------------------------------------------------------------------------------------------------------


class OutcomeIn(Schema):
    model_config = ConfigDict(extra="forbid")

    description: StrictStr = Field(description="What the run should deliver.")
    rubric: StrictStr = Field(description="The markdown rubric the grader checks the deliverables against.")
    max_iterations: StrictInt | None = Field(None, description="Evaluation cycles, 1 to 20 (default 3).")


class RunIn(Schema):
    model_config = ConfigDict(extra="forbid")

    task: Annotated[StrictStr, advertised(pattern=NOT_BLANK, maxLength=TASK_MAX_CHARS)] | None = Field(
        None,
        description="What the agent should do (at most 20,000 characters). Required, unless recipe_id is given: a "
        "replay's task is its recipe's.",
    )
    recipe_id: (
        Annotated[
            StrictStr,
            StringConstraints(
                pattern=documented_pattern(ids.public_id_pattern("rcp"), "must be a recipe's id (rcp_…)")
            ),
        ]
        | None
    ) = Field(
        None,
        description="Replay this recipe (rcp_…) of the workspace (docs/recipes.md): its steps without the model while "
        "every target is found and every checkpoint holds, then one extraction request for data; task, start_url, "
        "output_schema and session_id are the recipe's and must be left out.",
    )
    parameters: dict[StrictStr, Annotated[StrictStr, StringConstraints(max_length=2000)]] | None = Field(
        None,
        description="With recipe_id: values of the recipe's parameters ({name: value}); a parameter left out takes "
        "its default. Unknown names are invalid_request.",
    )
    session_id: StrictStr | None = Field(None, description="Continue in this session (its browser state and schema).")
    start_url: StrictStr | None = Field(None, description="An http(s) URL the browser opens first.")
    model: StrictStr | None = Field(
        None,
        description="An active or deprecated model id (GET the Models API's list); the platform's default when "
        "omitted. Unknown and retired models are refused; a deprecated one runs with a model.deprecated event.",
    )
    effort: StrictStr | None = Field(
        None,
        description="One of the model's effort levels (low, medium, high, xhigh, max as it offers them); "
        "the model's own default when omitted.",
    )
    thinking: StrictStr | None = Field(
        None,
        description="Thinking mode: 'adaptive', or the model's lowest setting ('between_tools' or 'disabled'); "
        "adaptive where the model supports it when omitted.",
    )
    max_turns: StrictInt | None = Field(
        None, description=f"Action turns allowed, 1 to 200 (default {settings.RUN_DEFAULT_MAX_TURNS})."
    )
    max_cost_usd: StrictInt | StrictFloat | StrictStr | None = Field(
        None,
        description="The most the run's model requests may cost, in dollars (default: the workspace's, $5 unless "
        "changed). A request that would pass it is not sent: the agent gets its verdict turn instead.",
    )
    output_schema: dict[str, Any] | None = Field(
        None, description="An object JSON Schema in the bounded subset (at most 8 KiB) the run's data must satisfy."
    )
    judge: StrictBool = Field(False, description="Have a judge read the run after it finishes.")
    judge_context: list[StrictStr] | None = Field(
        None, description="At most 8 statements of at most 500 characters the judge weighs first."
    )
    outcome: OutcomeIn | None = None
    allowed_domains: list[StrictStr] | None = Field(None, description="Host names the browser may reach.")
    metadata: dict[str, Any] | None = Field(None, description="Your own JSON object (at most 16 KiB), kept as is.")
    file_ids: list[StrictStr] | None = Field(
        None,
        description="Files of this workspace (ids from POST /files or a run's files) the agent may set on a file "
        "input; at most 20. An unknown or another workspace's id is invalid_request naming file_ids.",
        examples=[["file_3k9d0c2m7q8x1v5b6n4h2j0p"]],
    )
    proxy_id: StrictStr | None = Field(
        None,
        description="A proxy of the workspace (POST /api/v1/proxies) the run's browser goes out through, after the "
        "egress guard's checks. A session property: follow-ups keep it; naming another one is conflict.",
    )
    secrets: dict[str, StrictStr] | None = Field(
        None,
        description="Values the agent may type without seeing them ({NAME: value}, names like SHOP_PASSWORD): it "
        "sees {{secret:NAME}} placeholders, every event shows them masked, and no response returns them.",
    )
    profile_id: StrictStr | None = Field(
        None,
        description="Start the browser from this profile (prof_…; its cookies, local storage and IndexedDB). Only "
        "on a session's first run: a follow-up continues its session's browser.",
    )
    save_profile: StrictBool | None = Field(
        None,
        description="Write the run's final browser state back to its profile when it ends (default true).",
    )


class EventOut(Schema):
    id: str
    seq: int
    type: str
    data: Any = None
    processed_at: str


class EventListOut(Schema):
    events: list[EventOut]
    next_after: int
    has_more: bool


class SessionOut(Schema):
    id: str
    output_schema: dict[str, Any] | None
    run_count: int
    created_at: datetime


class SessionDetailOut(SessionOut):
    runs: list[RunOut]


class SessionListOut(Schema):
    sessions: list[SessionOut]
    next_cursor: str | None
    has_more: bool


ERRORS = ERROR_RESPONSES


# --- runs ----------------------------------------------------------------------------------------------------------


@router.post(
    "/runs",
    response={201: RunOut, 409: ErrorOut, 503: ErrorOut, **ERRORS},
    tags=["runs"],
    summary="Launch a run",
    description="Creates a run (and a session unless session_id names one) and queues it. A retried request "
    "with the same Idempotency-Key and body returns the run the first one created, with the header "
    "Idempotent-Replayed: true; the same key with another body is 409 conflict (detail.code idempotency_key_reused). "
    "Keys expire 24 hours after their first use.",
)
def create_run(
    request: ApiRequest,
    payload: RunIn,
    response: HttpResponse,
    idempotency_key: str | None = Header(None, alias="Idempotency-Key"),  # type: ignore[type-arg]  # ninja types its Query()/Header() defaults as generic
) -> Status[dict[str, Any]]:
    body = payload.model_dump(exclude_unset=True)
    recipe_id, parameters = body.pop("recipe_id", None), body.pop("parameters", None)
    launch_request = LaunchRequest.of(body, idempotency_key=idempotency_key)
    if recipe_id is not None:
        launched = launch_replay(request.workspace, launch_request, recipe_id=recipe_id, parameters=parameters)
    else:
        if parameters is not None:
            raise InvalidRequest.of_field("parameters", "is taken only with recipe_id")
        if launch_request.task is None:
            raise InvalidRequest.of_field("task", "is required (unless recipe_id names a recipe to replay)")
        launched = launch(request.workspace, launch_request)
    if launched.replayed:
        response["Idempotent-Replayed"] = "true"
    return Status(201, run_shown(request.workspace, launched.run))


@router.get("/runs", response={200: RunListOut, **ERRORS}, tags=["runs"], summary="List runs, newest first")
def list_runs(request: ApiRequest, filters: Query[RunFilters]) -> dict[str, Any]:
    return reading.list_runs(request.workspace, filters)


@router.get("/runs/{run_id}", response={200: RunOut, **ERRORS}, tags=["runs"], summary="A run")
def get_run(request: ApiRequest, run_id: RunPathId) -> dict[str, Any]:
    return run_out(find_run(request.workspace, run_id))


@router.post(
    "/runs/{run_id}/cancel",
    response={200: RunOut, **ERRORS},
    tags=["runs"],
    summary="Cancel a run",
    description="Idempotent. A queued run is cancelled at once; a running one stops at its next safe point; "
    "a finished run is returned as it is.",
)
def cancel_run(request: ApiRequest, run_id: RunPathId) -> dict[str, Any]:
    run = find_run(request.workspace, run_id)
    request_cancel(run)
    return run_shown(request.workspace, run)


# --- a person in the loop ----------------------------------------------------------------------------------------


class InputIn(Schema):
    model_config = ConfigDict(extra="forbid")

    id: StrictStr = Field(description="The pending input's id (inp_…), from the run's pending_input.")
    text: StrictStr = Field(description="The answer (at most 10,000 characters; a secret one 4 to 1,000).")


class ResumeIn(Schema):
    model_config = ConfigDict(extra="forbid")

    note: StrictStr = Field("", description="What the person did, for the agent (at most 10,000 characters).")


class MessageIn(Schema):
    model_config = ConfigDict(extra="forbid")

    text: StrictStr = Field(
        pattern=NOT_BLANK,
        max_length=human.TEXT_MAX_CHARS,
        description="The message for the agent (at most 10,000 characters).",
    )


def body_examples(**examples: dict[str, Any]) -> dict[str, Any]:
    return {
        "requestBody": {
            "content": {
                "application/json": {
                    "examples": {
                        name: {"summary": name.replace("_", " "), "value": value} for name, value in examples.items()
                    }
                }
            }
        }
    }


@router.post(
    "/runs/{run_id}/input",
    response={200: RunOut, 409: ErrorOut, **ERRORS},
    tags=["runs"],
    summary="Answer the agent's question",
    description="Answers the run's pending_input (the agent's ask_human call); the answer is the tool's result. "
    "A secret input's answer is masked everywhere and the agent sees only its placeholder. Emits run.input_received "
    "(without the text when secret). 404 for an input of another run or workspace; 409 when it was already "
    "answered, timed out, or the run ended.",
    openapi_extra=body_examples(
        answer={"id": "inp_3k9x0c2m7q1w5e8r4t6y2u0i", "text": "Use the billing address on file."},
        secret_code={"id": "inp_8h2j4k6l0z1x3c5v7b9n1m3q", "text": "482913"},
    ),
)
def answer_input(request: ApiRequest, run_id: RunPathId, payload: InputIn) -> dict[str, Any]:
    run = find_run(request.workspace, run_id)
    human.answer_input(run, payload.id, payload.text, by=request.api_key.actor)
    return run_shown(request.workspace, run)


@router.post(
    "/runs/{run_id}/pause",
    response={200: RunOut, 409: ErrorOut, **ERRORS},
    tags=["runs"],
    summary="Pause the agent (take control)",
    description="The agent stops before its next model request (the turn in progress finishes) and sends none "
    "while paused; members may then drive the browser from the run page's live view. Emits run.paused {by}. "
    "Pausing a paused run changes nothing; a run that is not running is 409. A pause longer than "
    "RUN_INPUT_TIMEOUT_SECONDS resumes by itself (run.resumed with by: timeout).",
)
def pause_run(request: ApiRequest, run_id: RunPathId) -> dict[str, Any]:
    run = find_run(request.workspace, run_id)
    human.pause(run, by=request.api_key.actor)
    return run_shown(request.workspace, run)


@router.post(
    "/runs/{run_id}/resume",
    response={200: RunOut, 409: ErrorOut, **ERRORS},
    tags=["runs"],
    summary="Hand the run back to the agent",
    description="Ends a pause: the agent's next request carries a user message saying a person had control, with "
    "the note. Emits run.resumed {by, note}. 409 when the run is not paused.",
    openapi_extra=body_examples(
        with_note={"note": "I signed in and accepted the cookie banner; carry on from the orders page."},
        without_note={},
    ),
)
def resume_run(request: ApiRequest, run_id: RunPathId, payload: ResumeIn) -> dict[str, Any]:
    run = find_run(request.workspace, run_id)
    human.resume(run, by=request.api_key.actor, note=payload.note)
    return run_shown(request.workspace, run)


@router.post(
    "/runs/{run_id}/messages",
    response={202: RunOut, 409: ErrorOut, **ERRORS},
    tags=["runs"],
    summary="Send the agent a message",
    description="Queues a message the agent receives as a user message with its next model request "
    "(run.message_queued now, agent.message_delivered when it is sent). 409 when the run has ended.",
    openapi_extra=body_examples(steer={"text": "Only look at invoices from 2026."}),
)
def queue_message(request: ApiRequest, run_id: RunPathId, payload: MessageIn) -> Status[dict[str, Any]]:
    run = find_run(request.workspace, run_id)
    human.queue_message(run, payload.text, by=request.api_key.actor)
    return Status(202, run_shown(request.workspace, run))


class EventFilters(Schema):
    after: int = Field(0, ge=0, le=SEQ_MAX, description="Return events with seq greater than this.")
    limit: int = Field(EVENTS_DEFAULT, ge=1, le=EVENTS_MAX)


@router.get(
    "/runs/{run_id}/events",
    response={200: EventListOut, **ERRORS},
    tags=["runs"],
    summary="A run's events in order",
    description="Pass the previous answer's next_after as after to follow a run without gaps or duplicates.",
)
def list_events(request: ApiRequest, run_id: RunPathId, filters: Query[EventFilters]) -> dict[str, Any]:
    run = find(Run.objects.for_workspace(request.workspace), run_id, "run")
    events = list(Event.objects.filter(run=run, seq__gt=filters.after).order_by("seq")[: filters.limit + 1])
    has_more = len(events) > filters.limit
    events = events[: filters.limit]
    return {
        "events": [event.as_dict() for event in events],
        "next_after": events[-1].seq if events else filters.after,
        "has_more": has_more,
    }


# --- the workspace's queue ----------------------------------------------------------------------------------------


class QueueOut(Schema):
    running: int = Field(description="Runs a worker is executing now.")
    queued: int = Field(description="Runs handed to the workers, waiting for a free worker slot.")
    waiting: int = Field(
        description="Runs waiting behind the workspace's concurrency limit: each goes to the workers, in launch "
        "order, when one of the workspace's runs ends."
    )
    max_concurrent_runs: int = Field(description="How many of the workspace's runs may be running or queued at once.")
    max_queued_runs: int = Field(description="How many may be queued or waiting at all; a launch beyond it is 429.")

    model_config = ConfigDict(
        json_schema_extra={
            "example": {"running": 4, "queued": 1, "waiting": 195, "max_concurrent_runs": 5, "max_queued_runs": 1000}
        }
    )


@router.get(
    "/queue",
    response={200: QueueOut, **ERRORS},
    tags=["runs"],
    summary="The workspace's runs in flight and its limits",
    description="Workers pick across workspaces fairly: the workspace with the fewest runs running goes first, so "
    "another workspace's batch never holds a run back by more than one worker slot.",
)
def get_queue(request: ApiRequest) -> dict[str, Any]:
    return dataclasses.asdict(depth(request.workspace))


# --- sessions ------------------------------------------------------------------------------------------------------


def session_out(session: Session, run_count: int) -> dict[str, Any]:
    return {
        "id": session.public_id,
        "output_schema": session.output_schema,
        "run_count": run_count,
        "created_at": session.created_at,
    }


class SessionFilters(Schema):
    cursor: Cursor | None = Field(None, description="next_cursor of the previous page, as it was given.")
    limit: int = Field(PAGE_DEFAULT, ge=1, le=PAGE_MAX)


@router.get("/sessions", response={200: SessionListOut, **ERRORS}, tags=["sessions"], summary="List sessions")
def list_sessions(request: ApiRequest, filters: Query[SessionFilters]) -> dict[str, Any]:
    sessions = Session.objects.for_workspace(request.workspace).annotate(run_count=Count("runs"))
    page = paginate(sessions, filters.cursor, filters.limit)
    return {
        "sessions": [session_out(session, session.run_count) for session in page.rows],  # type: ignore[attr-defined]  # annotated above
        "next_cursor": page.next_cursor,
        "has_more": page.has_more,
    }


@router.get(
    "/sessions/{session_id}",
    response={200: SessionDetailOut, **ERRORS},
    tags=["sessions"],
    summary="A session with its schema and its runs in order",
)
def get_session(request: ApiRequest, session_id: SessionPathId) -> dict[str, Any]:
    session = find(Session.objects.for_workspace(request.workspace), session_id, "session")
    runs = list(reading.runs_of(request.workspace).filter(session=session).order_by("created_at", "id"))
    return {**session_out(session, len(runs)), "runs": [run_out(run) for run in runs]}
