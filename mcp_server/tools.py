"""The MCP tools: launch, read, wait for, list, cancel and re-judge a workspace's runs, and list the models.

Each tool is an adapter over the services the v1 API calls (runs.launch, the runs' read side in runs.reading,
runs.lifecycle, runs.human, judge.services, agent_platform.llm), never over a v1 endpoint function, so a run launched here is the same run, with the same id and the
same bill, in the API and the pages, and a refusal says what the API's envelope says. The database is reached from the
event loop through database_sync_to_async, never directly.
"""

import asyncio
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from channels.db import database_sync_to_async
from django.conf import settings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, ContentBlock, InputRequiredResult, TextContent, ToolAnnotations
from ninja import Schema
from ninja.responses import NinjaJSONEncoder
from pydantic import BaseModel, Field, ValidationError

from agent_platform import llm
from agent_platform.api import advertised, describe_validation_errors
from agent_platform.errors import AuthenticationFailed, Conflict, InvalidRequest, ServiceError, ServiceUnavailable
from agent_platform.lookup import find
from judge.models import Judgment
from judge.services import JUDGE_CONTEXT_MAX_CHARS, JUDGE_CONTEXT_MAX_STATEMENTS, request_rejudge
from runs import event_types, human, reading
from runs.launch import launch
from runs.launch_rules import (
    MAX_COST_USD_LIMIT,
    MAX_TURNS_LIMIT,
    START_URL_MAX_CHARS,
    TASK_MAX_CHARS,
    LaunchRequest,
)
from runs.lifecycle import request_cancel
from runs.models import Event, Run
from runs.presets import ITEMS_SCHEMA
from runs.reading import PAGE_DEFAULT, PAGE_MAX, Cursor, RunFilters, RunListOut, RunOut, SessionId, find_run, run_shown
from runs.schema import SCHEMA_MAX_BYTES, SUPPORTED

from .auth import AUTHENTICATION_REQUIRED, SCOPE_KEY, McpRequest

Result = TypeVar("Result")

# How often wait_for_run reads a run's new events: a turn takes seconds, so a turn's progress arrives within this of
# its record's commit, and a waiting client costs two small queries per interval.
WAIT_POLL_SECONDS = 0.5
WAIT_DEFAULT_SECONDS = 300
WAIT_MAX_SECONDS = 900

# The events that say a turn happened, with its number: the registry's kinds with the MCP door.
TURN_EVENTS = event_types.MCP_TURNS

INSTRUCTIONS = """Pilothouse runs browser agents: Claude driving a real Chromium, in the API key's workspace.
Launch a run with launch_run (a task, usually a start_url; an output_schema for structured data; judge: true for a
second reading), then call wait_for_run with its id: it reports each turn as progress and returns the finished run,
with status, success, output (the agent's own account), data (matching output_schema), error, judgment, signals, usage
and cost. get_run reads a run at any time, list_runs pages through runs newest first, cancel_run stops one,
rejudge_run asks the judge again, list_models names the models launch_run accepts. A follow-up run in the same
browser state passes the earlier run's session_id."""

RUN_ID = Annotated[
    str,
    Field(
        description="The run's id as launch_run or list_runs returned it, such as 'run_01jf3k2m9x'.",
        min_length=1,
        max_length=60,
    ),
]


class ModelOut(BaseModel):
    id: str = Field(description="What launch_run's model takes.")
    display_name: str
    max_input_tokens: int | None
    effort_levels: list[str]
    thinking_modes: list[str]
    image_input: bool


class ModelListOut(BaseModel):
    default_model: str = Field(description="The model a run gets when launch_run names none.")
    models: list[ModelOut] = Field(description="The active models, newest first.")


class PilothouseMCP(MCPServer):
    """The SDK's server, with arguments its input schemas refuse answered as the API answers a bad field."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            cause = error.__cause__
            if isinstance(error, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            message, _ = describe_validation_errors([dict(problem) for problem in cause.errors()])
            raise ToolError(refusal_text(InvalidRequest(message))) from cause


server = PilothouseMCP(name="pilothouse", title="Pilothouse", instructions=INSTRUCTIONS)


# --- answers -------------------------------------------------------------------------------------------------------


def refusal_text(error: ServiceError) -> str:
    """A refusal as the model reads it: the envelope's type, then its message (which names the field at fault)."""
    return f"{error.code}: {error.message}"


def refusal(error: ServiceError) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=refusal_text(error))], is_error=True)


def as_api_json(schema: type[Schema], value: Any) -> dict[str, Any]:
    """`value` as the v1 API sends it: validated by its response schema, encoded by ninja's JSON encoder."""
    dumped = schema.model_validate(value).model_dump()
    loaded: dict[str, Any] = json.loads(json.dumps(dumped, cls=NinjaJSONEncoder))
    return loaded


def structured(data: dict[str, Any], note: str | None = None) -> CallToolResult:
    """A tool's answer: the data as structured content and, for clients that read only text, as JSON text after the
    note, if there is one."""
    text: list[ContentBlock] = [TextContent(type="text", text=note)] if note else []
    text.append(TextContent(type="text", text=json.dumps(data)))
    return CallToolResult(content=text, structured_content=data)


def caller(ctx: Context) -> McpRequest:
    """The admitted request this tool call came with (mcp_server.endpoint admits every request before the SDK sees it).

    Raises AuthenticationFailed when there is none: the server was reached without the endpoint.
    """
    request = ctx.request_context.request
    admitted = request.scope.get(SCOPE_KEY) if request is not None else None
    if not isinstance(admitted, McpRequest):
        raise AuthenticationFailed(AUTHENTICATION_REQUIRED)
    return admitted


async def in_thread(work: Callable[[], Result]) -> Result:
    """Run database work off the event loop, closing connections Django would close at a request's end."""
    done: Result = await database_sync_to_async(work)()
    return done


async def answer(ctx: Context, work: Callable[[McpRequest], CallToolResult]) -> CallToolResult:
    """The caller's work done in a thread; a service's refusal becomes the tool's error."""
    try:
        request = caller(ctx)
        return await in_thread(functools.partial(work, request))
    except ServiceError as error:
        return refusal(error)


async def act_on_run(ctx: Context, run_id: str, act: Callable[[McpRequest, Run], object]) -> CallToolResult:
    """The caller's run found, `act(request, run)` done to it in a thread, and the run returned as it is now: every
    tool that changes a run answers alike (a refusal of `act` becomes the tool's error, as in `answer`)."""

    def work(request: McpRequest) -> CallToolResult:
        run = find_run(request.workspace, run_id)
        act(request, run)
        return structured(as_api_json(RunOut, run_shown(request.workspace, run)))

    return await answer(ctx, work)


def read_run(request: McpRequest, run_id: str) -> dict[str, Any]:
    """The caller's run as get_run returns it (and /api/v1/runs/{id} does)."""
    return as_api_json(RunOut, reading.run_out(find_run(request.workspace, run_id)))


# --- the tools -----------------------------------------------------------------------------------------------------


@server.tool(title="Launch a browser-agent run")
async def launch_run(
    ctx: Context,
    task: Annotated[
        str,
        advertised(minLength=1, maxLength=TASK_MAX_CHARS),
        Field(
            description="What the agent should do and what it should report back, in plain words, such as 'List "
            f"every product on the page with its price.' At most {TASK_MAX_CHARS} characters.",
        ),
    ],
    start_url: Annotated[
        Annotated[str, advertised(maxLength=START_URL_MAX_CHARS)] | None,
        Field(
            description="An http:// or https:// URL the browser opens before the agent's first turn; without one "
            "the agent starts on a blank page (or, with session_id, where the session's browser was). At most "
            f"{START_URL_MAX_CHARS} characters.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        Field(description="A model id from list_models; the platform's default model when omitted."),
    ] = None,
    effort: Annotated[
        str | None,
        Field(description="One of the model's effort_levels from list_models; the model's own default when omitted."),
    ] = None,
    thinking: Annotated[
        str | None,
        Field(description="One of the model's thinking_modes from list_models; adaptive where it can when omitted."),
    ] = None,
    output_schema: Annotated[
        dict[str, Any] | None,
        Field(
            description=f"A JSON Schema object the run's data must satisfy, such as {json.dumps(ITEMS_SCHEMA)}. The "
            f"root must be an object; at most {SCHEMA_MAX_BYTES} bytes; keywords: {SUPPORTED} ($ref, format and "
            "pattern are refused). A session keeps the schema its first run set: a follow-up with session_id omits it "
            "(or repeats it exactly).",
        ),
    ] = None,
    judge: Annotated[
        bool,
        Field(
            description="Have a judge model read the run after it finishes: its verdict (pass, fail or uncertain) "
            "and reason arrive as the run's judgment."
        ),
    ] = False,
    judge_context: Annotated[
        Annotated[
            list[Annotated[str, advertised(minLength=1, maxLength=JUDGE_CONTEXT_MAX_CHARS)]],
            advertised(maxItems=JUDGE_CONTEXT_MAX_STATEMENTS),
        ]
        | None,
        Field(
            description=f"Up to {JUDGE_CONTEXT_MAX_STATEMENTS} statements of at most {JUDGE_CONTEXT_MAX_CHARS} "
            "characters that the judge weighs before everything else and the agent never sees, such as 'Prices are "
            "in euros.'",
        ),
    ] = None,
    max_turns: Annotated[
        Annotated[int, advertised(minimum=1, maximum=MAX_TURNS_LIMIT)] | None,
        Field(
            description=f"Action turns the agent may take, 1 to {MAX_TURNS_LIMIT} (default "
            f"{settings.RUN_DEFAULT_MAX_TURNS}); one more turn follows for its verdict.",
        ),
    ] = None,
    max_cost_usd: Annotated[
        Annotated[float, advertised(exclusiveMinimum=0, maximum=float(MAX_COST_USD_LIMIT))] | None,
        Field(
            description="The most the run's model requests may cost, in US dollars, such as 0.5 (default: the "
            f"workspace's cap), at most {MAX_COST_USD_LIMIT}. A request that would pass it is not sent: the agent "
            "gets its verdict turn instead.",
        ),
    ] = None,
    session_id: Annotated[
        str | None,
        Field(
            description="Continue in this session's browser state (cookies, the open page) and schema: the "
            "session_id of an earlier run, such as 'sess_01jf3k2m9x'. Omit it to start a new session.",
            max_length=60,
        ),
    ] = None,
    profile_id: Annotated[
        str | None,
        Field(
            description="Start the browser from this profile (a workspace's saved sign-in: cookies, local storage, "
            "IndexedDB), such as 'prof_4k2j9x0c7v1b8n3m5q6w2e7r'; the run writes its final state back when it ends. "
            "Only on a session's first run: a follow-up with session_id continues its session's browser.",
            max_length=60,
        ),
    ] = None,
    save_profile: Annotated[
        bool | None,
        Field(
            description="With profile_id: write the browser's final state back to the profile when the run ends "
            "(the default, true), or leave the profile as it was (false)."
        ),
    ] = None,
    file_ids: Annotated[
        list[Annotated[str, Field(max_length=60)]] | None,
        Field(
            description="Files of the workspace (file_…, uploaded with POST /api/v1/files) the agent may set on a "
            "page's file input; at most 20.",
            max_length=20,
        ),
    ] = None,
) -> Annotated[CallToolResult, RunOut]:
    """Launch a browser-agent run in the workspace and return it, queued. Follow it with wait_for_run (progress per
    turn, returns the finished run) or get_run. The agent ends by calling done with success, output and, with an
    output_schema, data."""

    def work(request: McpRequest) -> CallToolResult:
        launch_request = LaunchRequest(
            task=task,
            start_url=start_url,
            model=model,
            effort=effort,
            thinking=thinking,
            output_schema=output_schema,
            judge=judge,
            judge_context=judge_context,
            max_turns=max_turns,
            max_cost_usd=max_cost_usd,
            session_id=session_id,
            profile_id=profile_id,
            save_profile=save_profile,
            file_ids=file_ids,
        )
        launched = launch(request.workspace, launch_request)
        return structured(as_api_json(RunOut, run_shown(request.workspace, launched.run)))

    return await answer(ctx, work)


@server.tool(title="Read a run", annotations=ToolAnnotations(read_only_hint=True))
async def get_run(ctx: Context, run_id: RUN_ID) -> Annotated[CallToolResult, RunOut]:
    """A run as it is now: status (queued, running, succeeded, failed, cancelled), success, output (the agent's own
    account), data (matching its output_schema), error, judgment, signals, usage and cost_usd."""
    return await answer(ctx, lambda request: structured(read_run(request, run_id)))


@dataclass(frozen=True)
class Look:
    """What wait_for_run saw at one read: the turns that began since the last, and whether the wait is over."""

    turns: list[tuple[int, str]]
    last_seq: int
    status: str
    settled: bool


def turn_summary(number: int, tools: list[str]) -> str:
    return f"Turn {number}: {', '.join(tools)}" if tools else f"Turn {number}: the agent wrote a message"


def look_at(request: McpRequest, run_id: str, after: int, since_turn: int, include_judgment: bool) -> Look:
    """The run's turns that began after turn `since_turn` in its events after seq `after`, and whether it is settled:
    finished and, when asked and a judgment is coming (judge.services.judge_on_finish), judged."""
    run = find(Run.objects.for_workspace(request.workspace), run_id, "run")
    rows = Event.objects.filter(run=run, seq__gt=after, type__in=TURN_EVENTS).order_by("seq")
    turns: dict[int, list[str]] = {}
    last_seq = after
    for seq, type, turn, name, toolset in rows.values_list(
        "seq", "type", "payload__turn", "payload__name", "payload__toolset"
    ):
        last_seq = seq
        if isinstance(turn, int) and turn > since_turn:
            tools = turns.setdefault(turn, [])
            if type == event_types.AGENT_TOOL_USE.name:
                tools.append(f"{toolset}.{name}" if toolset else str(name))
    judgment_coming = include_judgment and run.judge and run.status != Run.Status.CANCELLED
    settled = run.is_finished and (not judgment_coming or Judgment.objects.filter(run=run).exists())
    summaries = [(number, turn_summary(number, tools)) for number, tools in sorted(turns.items())]
    return Look(summaries, last_seq, run.status, settled)


@server.tool(title="Wait for a run to finish", annotations=ToolAnnotations(read_only_hint=True))
async def wait_for_run(
    ctx: Context,
    run_id: RUN_ID,
    timeout_seconds: Annotated[
        int,
        Field(
            description=f"How long to wait, 1 to {WAIT_MAX_SECONDS} seconds. A run still going then is returned as "
            "it is, with a note: call wait_for_run again to keep waiting.",
            ge=1,
            le=WAIT_MAX_SECONDS,
        ),
    ] = WAIT_DEFAULT_SECONDS,
    include_judgment: Annotated[
        bool,
        Field(description="For a run launched with judge: true, also wait (within the timeout) for its judgment."),
    ] = True,
) -> Annotated[CallToolResult, RunOut]:
    """Wait until the run finishes (and, by default, is judged), sending a progress notification for each turn the
    agent takes, then return the run as get_run does."""
    try:
        request = caller(ctx)
        deadline = time.monotonic() + timeout_seconds
        after, reported = 0, 0
        while True:
            look = await in_thread(functools.partial(look_at, request, run_id, after, reported, include_judgment))
            for number, summary in look.turns:
                await ctx.report_progress(number, message=summary)
                reported = number
            after = look.last_seq
            remaining = deadline - time.monotonic()
            if look.settled or remaining <= 0:
                break
            await asyncio.sleep(min(WAIT_POLL_SECONDS, remaining))
        run = await in_thread(functools.partial(read_run, request, run_id))
    except ServiceError as error:
        return refusal(error)
    if look.settled:
        return structured(run)
    waiting_for = "its judgment is not in yet" if look.status in Run.TERMINAL else f"it is still {look.status}"
    return structured(run, note=f"After {timeout_seconds} s {waiting_for}: call wait_for_run again to keep waiting.")


@server.tool(title="List runs", annotations=ToolAnnotations(read_only_hint=True))
async def list_runs(
    ctx: Context,
    status: Annotated[
        Literal["queued", "running", "succeeded", "failed", "cancelled"] | None,
        Field(description="Only runs with this status."),
    ] = None,
    session_id: Annotated[SessionId | None, Field(description="Only the runs of this session.")] = None,
    verdict: Annotated[
        Literal["pass", "fail", "uncertain"] | None, Field(description="Only runs whose latest judgment says this.")
    ] = None,
    limit: Annotated[int, Field(description=f"Runs per page, 1 to {PAGE_MAX}.", ge=1, le=PAGE_MAX)] = PAGE_DEFAULT,
    cursor: Annotated[
        Cursor | None, Field(description="The next_cursor of the previous page, for the page after it.")
    ] = None,
) -> Annotated[CallToolResult, RunListOut]:
    """The workspace's runs, newest first, a page at a time: runs, next_cursor (None on the last page) and has_more."""
    filters = RunFilters(status=status, session_id=session_id, verdict=verdict, limit=limit, cursor=cursor)
    return await answer(
        ctx, lambda request: structured(as_api_json(RunListOut, reading.list_runs(request.workspace, filters)))
    )


@server.tool(
    title="Cancel a run", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
)
async def cancel_run(ctx: Context, run_id: RUN_ID) -> Annotated[CallToolResult, RunOut]:
    """Cancel a run and return it: a queued run is cancelled at once, a running one stops at its next safe point
    (its status turns cancelled shortly after), a finished run is returned as it is."""

    return await act_on_run(ctx, run_id, lambda request, run: request_cancel(run))


@server.tool(title="Judge a finished run again", annotations=ToolAnnotations(read_only_hint=False))
async def rejudge_run(
    ctx: Context,
    run_id: RUN_ID,
    judge_context: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=JUDGE_CONTEXT_MAX_CHARS)]] | None,
        Field(
            description=f"Replaces the run's judge_context for this reading: up to {JUDGE_CONTEXT_MAX_STATEMENTS} "
            f"statements of at most {JUDGE_CONTEXT_MAX_CHARS} characters; the run's own when omitted.",
            max_length=JUDGE_CONTEXT_MAX_STATEMENTS,
        ),
    ] = None,
) -> Annotated[CallToolResult, RunOut]:
    """Queue another judge reading of a finished run and return the run; the new judgment replaces judgment once it
    is in (wait_for_run does not wait for it: read it with get_run). Every judgment is kept and billed as judge
    usage."""

    return await act_on_run(
        ctx, run_id, lambda request, run: request_rejudge(run, judge_context=judge_context, requested_by=None)
    )


@server.tool(title="Answer the agent's question", annotations=ToolAnnotations(read_only_hint=False))
async def answer_input(
    ctx: Context,
    run_id: RUN_ID,
    text: Annotated[
        str,
        Field(
            min_length=1,
            max_length=human.TEXT_MAX_CHARS,
            description="The answer, which the agent receives as its ask_human result (a secret one: 4 to 1,000 "
            "characters, masked everywhere, the agent sees only a placeholder).",
        ),
    ],
    input_id: Annotated[
        str | None,
        Field(description="The pending input's id (inp_…) from get_run's pending_input; the pending one if omitted."),
    ] = None,
) -> Annotated[CallToolResult, RunOut]:
    """Answer the question the agent asked the operator (get_run shows it as pending_input) and return the run. A run
    with no pending question, or one already answered, is a conflict."""

    def work(request: McpRequest) -> CallToolResult:
        run = find_run(request.workspace, run_id)
        chosen = input_id
        if chosen is None:
            pending = human.pending_input(run)
            if pending is None:
                raise Conflict("The run has no pending question to answer.")
            chosen = pending["id"]
        human.answer_input(run, chosen, text, by=request.api_key.actor)
        return structured(as_api_json(RunOut, run_shown(request.workspace, run)))

    return await answer(ctx, work)


@server.tool(title="Hand a paused run back to the agent", annotations=ToolAnnotations(read_only_hint=False))
async def resume_run(
    ctx: Context,
    run_id: RUN_ID,
    note: Annotated[
        str,
        Field(
            max_length=human.TEXT_MAX_CHARS,
            description="What the person did while they had control; the agent's next request carries it.",
        ),
    ] = "",
) -> Annotated[CallToolResult, RunOut]:
    """Resume a paused run (a person took control on the run page, or POST /runs/{id}/pause) and return it; a run
    that is not paused is a conflict."""

    return await act_on_run(ctx, run_id, lambda request, run: human.resume(run, by=request.api_key.actor, note=note))


@server.tool(title="List the models", annotations=ToolAnnotations(read_only_hint=True))
async def list_models(ctx: Context) -> Annotated[CallToolResult, ModelListOut]:
    """The models launch_run's model accepts (the active ones, newest first, with their effort levels and thinking
    modes), and the default a run gets without one."""

    def work(request: McpRequest) -> CallToolResult:
        try:
            lineup = llm.active_models()
        except llm.ProfilesUnavailable as error:
            raise ServiceUnavailable(str(error)) from None
        models = [
            ModelOut(
                id=found.id,
                display_name=found.display_name,
                max_input_tokens=found.max_input_tokens,
                effort_levels=list(found.effort_levels),
                thinking_modes=list(found.thinking_modes),
                image_input=found.image_input,
            )
            for found in lineup
        ]
        listing = ModelListOut(default_model=settings.DEFAULT_MODEL, models=models)
        return structured(listing.model_dump(mode="json"))

    return await answer(ctx, work)
