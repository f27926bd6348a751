"""The MCP tools beside launching and reading: a person's hand on a running agent (pause, message; answering and
resuming are in mcp_server.tools), a run's files, and recipes (make one from a run, replay one). Each calls the
service the API calls (runs.human, runs.files, runs.recipes.services, read through runs.reading) in the caller's
workspace, and answers what the v1 API would."""

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from runs import human
from runs.files import FileListOut, run_files_out
from runs.launch_rules import LaunchRequest
from runs.reading import RunOut, find_run, run_shown
from runs.recipes import services as recipes
from runs.recipes.reading import RecipeOut, recipe_out

from .auth import McpRequest
from .tools import RUN_ID, act_on_run, answer, as_api_json, server, structured

RECIPE_ID = Annotated[
    str,
    Field(
        description="The recipe's id as make_recipe returned it, such as 'rcp_01jf3k2m9x'.", min_length=1, max_length=60
    ),
]


@server.tool(title="Pause a run", annotations=ToolAnnotations(read_only_hint=False))
async def pause_run(ctx: Context, run_id: RUN_ID) -> Annotated[CallToolResult, RunOut]:
    """Stop the agent before its next model request (the turn in progress finishes) so a person can act in its
    browser from the run page; resume_run hands it back. A run that is not running is a conflict."""

    return await act_on_run(ctx, run_id, lambda request, run: human.pause(run, by=request.api_key.actor))


@server.tool(title="Send the agent a message", annotations=ToolAnnotations(read_only_hint=False))
async def send_message(
    ctx: Context,
    run_id: RUN_ID,
    text: Annotated[
        str,
        Field(
            min_length=1,
            max_length=human.TEXT_MAX_CHARS,
            description="What the agent should know or do, such as 'Only invoices from 2026.'; it arrives as a user "
            "message with the agent's next model request.",
        ),
    ],
) -> Annotated[CallToolResult, RunOut]:
    """Queue a message for a queued or running run's agent; a run that ended is a conflict."""

    return await act_on_run(ctx, run_id, lambda request, run: human.queue_message(run, text, by=request.api_key.actor))


@server.tool(title="List a run's files", annotations=ToolAnnotations(read_only_hint=True))
async def list_run_files(ctx: Context, run_id: RUN_ID) -> Annotated[CallToolResult, FileListOut]:
    """The files the run was given (source upload), then those its browser downloaded (source download), oldest
    first: id, name, size, content_type, sha256. Their bytes: GET /api/v1/files/{id}/content with the same key."""

    def work(request: McpRequest) -> CallToolResult:
        run = find_run(request.workspace, run_id)
        return structured(as_api_json(FileListOut, run_files_out(run)))

    return await answer(ctx, work)


@server.tool(title="Make a recipe from a run", annotations=ToolAnnotations(read_only_hint=False))
async def make_recipe(
    ctx: Context,
    run_id: RUN_ID,
    name: Annotated[
        str | None, Field(description="The recipe's name; the run's task if omitted.", max_length=200)
    ] = None,
    parameters: Annotated[
        dict[str, str] | None,
        Field(
            description="Values the run typed that a replay may change, by parameter name, such as "
            "{'email': 'ada@example.com'}.",
        ),
    ] = None,
) -> Annotated[CallToolResult, RecipeOut]:
    """A recipe of a succeeded run's browser actions: replay_recipe runs them again with no model request, healing
    with the agent where the page changed (docs/recipes.md). A run that did not succeed is a conflict."""

    def work(request: McpRequest) -> CallToolResult:
        run = find_run(request.workspace, run_id)
        body: dict[str, Any] = {}
        if name is not None:
            body["name"] = name
        if parameters is not None:
            body["parameters"] = parameters
        recipe = recipes.make_recipe(run, **body)
        return structured(as_api_json(RecipeOut, recipe_out(recipe)))

    return await answer(ctx, work)


@server.tool(title="Replay a recipe", annotations=ToolAnnotations(read_only_hint=False))
async def replay_recipe(
    ctx: Context,
    recipe_id: RECIPE_ID,
    parameters: Annotated[
        dict[str, str] | None, Field(description="A value for each of the recipe's parameters, by name.")
    ] = None,
    secrets: Annotated[
        dict[str, str] | None,
        Field(description="The secrets the recipe types ({{secret:NAME}}), by name; never shown back."),
    ] = None,
) -> Annotated[CallToolResult, RunOut]:
    """Launch a run that replays the recipe's current version with these parameters and return it, queued; follow it
    with wait_for_run."""

    def work(request: McpRequest) -> CallToolResult:
        launched = recipes.launch_replay(
            request.workspace, LaunchRequest(secrets=secrets), recipe_id=recipe_id, parameters=parameters
        )
        return structured(as_api_json(RunOut, run_shown(request.workspace, launched.run)))

    return await answer(ctx, work)
