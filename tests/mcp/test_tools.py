"""The MCP server's tools through the official client against Daphne: what they are and what their schemas say, what
they refuse (naming the field, as the API's envelope does), and waiting, cancelling and re-judging without a worker."""

import asyncio

import httpx2
import pytest
from django.conf import settings
from django.utils import timezone

from agent_platform import llm
from agent_platform.asgi import application
from runs.models import Run, RunInput, RunMessage
from tests.support import live
from tests.support.factories import make_run
from tests.support.mcp_client import call, connected, data_of, text_of, with_client
from tests.support.sites import free_port

pytestmark = pytest.mark.usefixtures("transactional_db")

asgi_server = live.asgi_server

TOOLS = {
    "launch_run", "get_run", "wait_for_run", "list_runs", "cancel_run", "rejudge_run", "list_models", "answer_input",
    "resume_run", "pause_run", "send_message", "list_run_files", "make_recipe", "replay_recipe",
}  # fmt: skip
LAUNCH_FIELDS = {
    "task", "start_url", "model", "effort", "thinking", "output_schema", "judge", "judge_context", "max_turns",
    "max_cost_usd", "session_id", "profile_id", "save_profile", "file_ids",
}  # fmt: skip


def refusal(result) -> str:
    assert result.is_error, result.structured_content
    return text_of(result)


def test_the_tools_and_their_schemas(asgi_server, acme_key):
    async def tools_and_a_missing_one(client):
        return await client.list_tools(), await client.call_tool("delete_run", {"run_id": "run_1"})

    listed, missing = with_client(f"{asgi_server}/mcp", acme_key, tools_and_a_missing_one)
    tools = {tool.name: tool for tool in listed.tools}
    assert set(tools) == TOOLS
    assert refusal(missing) == "Unknown tool: delete_run"
    for tool in tools.values():
        assert tool.description and tool.title and tool.output_schema, tool.name
        assert tool.input_schema["type"] == "object"

    launch = tools["launch_run"].input_schema
    assert set(launch["properties"]) == LAUNCH_FIELDS and launch["required"] == ["task"]
    described = {name for name, field in launch["properties"].items() if field.get("description")}
    assert described == LAUNCH_FIELDS, "every field says what it takes"
    assert launch["properties"]["task"]["minLength"] == 1
    max_turns = launch["properties"]["max_turns"]["anyOf"][0]
    assert (max_turns["type"], max_turns["minimum"], max_turns["maximum"]) == ("integer", 1, 200)
    judge_context = launch["properties"]["judge_context"]["anyOf"][0]
    assert judge_context["maxItems"] == 8 and judge_context["items"]["maxLength"] == 500
    assert launch["properties"]["max_cost_usd"]["anyOf"][0]["exclusiveMinimum"] == 0
    assert "additionalProperties" in launch["properties"]["output_schema"]["description"]

    assert tools["wait_for_run"].input_schema["required"] == ["run_id"]
    assert tools["list_runs"].input_schema["properties"]["status"]["anyOf"][0]["enum"] == [
        "queued", "running", "succeeded", "failed", "cancelled",
    ]  # fmt: skip
    for name in ("get_run", "wait_for_run", "list_runs", "list_models"):
        assert tools[name].annotations.read_only_hint is True, name
    assert tools["cancel_run"].annotations.destructive_hint is True
    assert {"status", "data", "judgment", "signals", "usage"} <= set(tools["get_run"].output_schema["properties"])


def test_list_models_names_the_default_and_the_active_models(asgi_server, acme_key):
    listing = data_of(call(f"{asgi_server}/mcp", acme_key, "list_models"))
    assert listing["default_model"] == settings.DEFAULT_MODEL
    ids = [model["id"] for model in listing["models"]]
    assert settings.DEFAULT_MODEL in ids and len(ids) == len(set(ids))
    assert {"effort_levels", "thinking_modes", "image_input", "max_input_tokens"} <= set(listing["models"][0])


def test_list_models_when_the_models_api_cannot_be_asked(settings, acme_key):
    # In process: the Models API's address is the web process's setting; here it points at a closed port.
    settings.ANTHROPIC_BASE_URL = f"http://127.0.0.1:{free_port()}"
    llm.forget_profiles()
    transport = httpx2.ASGITransport(app=application)

    async def list_models():
        async with connected("http://testserver/mcp", acme_key, transport=transport) as client:
            return await client.call_tool("list_models", {})

    try:
        result = asyncio.run(list_models())
    finally:
        llm.forget_profiles()
    assert refusal(result) == (
        "service_unavailable: The Models API could not be asked about models: it could not be reached. Try again "
        "shortly."
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"task": "x", "max_turns": 0}, "invalid_request: max_turns: must be between 1 and 200"),
        ({"task": "x", "judge_context": ["a"] * 9}, "invalid_request: judge_context: has 9 statements; at most 8 are allowed"),
        ({"task": "   "}, "invalid_request: task: is required and must not be empty"),
        ({"task": "x", "start_url": "ftp://example.com/"}, "invalid_request: start_url: must be an http:// or https:// URL with a host"),
        ({"task": "x", "model": "claude-nothing-1"}, "invalid_request: model: 'claude-nothing-1' is not a model the Models API knows; pick one of the active models"),
        ({"task": "x", "output_schema": {"type": "string"}}, 'invalid_request: output_schema: at $.type: the root must be an object schema ("type": "object")'),
        ({"task": "x", "session_id": "sess_nothing"}, "not_found: session_id: no session 'sess_nothing' in this workspace."),
        ({"task": "x", "profile_id": "prof_1"}, "invalid_request: profile_id: no profile 'prof_1' in this workspace (GET /api/v1/profiles lists them)"),
    ],
)  # fmt: skip
def test_a_launch_the_api_would_refuse_is_refused_naming_the_field(arguments, message, asgi_server, acme_key):
    assert refusal(call(f"{asgi_server}/mcp", acme_key, "launch_run", arguments)) == message
    assert not Run.objects.exists()


def test_a_launch_with_a_profile_starts_from_it(asgi_server, acme, acme_key, umbrella):
    from runs.profiles.models import Profile

    ours = Profile.objects.create(workspace=acme, name="Portal")
    theirs = Profile.objects.create(workspace=umbrella, name="Theirs")
    launched = data_of(call(f"{asgi_server}/mcp", acme_key, "launch_run", {"task": "x", "profile_id": ours.public_id}))
    assert launched["profile_id"] == ours.public_id and launched["save_profile"] is True
    refused = refusal(call(f"{asgi_server}/mcp", acme_key, "launch_run", {"task": "x", "profile_id": theirs.public_id}))
    assert (
        refused
        == f"invalid_request: profile_id: no profile '{theirs.public_id}' in this workspace (GET /api/v1/profiles lists them)"
    )


def test_a_cursor_this_api_never_returned_is_refused(asgi_server, acme_key):
    result = call(f"{asgi_server}/mcp", acme_key, "list_runs", {"cursor": "bogus!"})
    assert refusal(result) == "invalid_request: Invalid request: cursor: not a cursor this API returned."


def test_a_session_id_of_another_shape_is_refused_as_the_api_refuses_it(asgi_server, acme_key):
    result = call(f"{asgi_server}/mcp", acme_key, "list_runs", {"session_id": "run_" + "0" * 24})
    assert refusal(result) == "invalid_request: Invalid request: session_id: not a session id of this API."


def test_list_runs_pages_newest_first_with_filters(asgi_server, acme, acme_key):
    older, newer = make_run(acme), make_run(acme)
    make_run(acme, status=Run.Status.FAILED)

    async def pages(client):
        first = await client.call_tool("list_runs", {"status": "queued", "limit": 1})
        second = await client.call_tool(
            "list_runs", {"status": "queued", "limit": 1, "cursor": first.structured_content["next_cursor"]}
        )
        return data_of(first), data_of(second)

    first, second = with_client(f"{asgi_server}/mcp", acme_key, pages)
    assert [run["id"] for run in first["runs"]] == [newer.public_id] and first["has_more"] is True
    assert [run["id"] for run in second["runs"]] == [older.public_id] and second["has_more"] is False


def test_wait_for_run_returns_a_run_still_queued_with_a_note(asgi_server, acme, acme_key):
    run = make_run(acme)  # no worker takes it
    result = call(f"{asgi_server}/mcp", acme_key, "wait_for_run", {"run_id": run.public_id, "timeout_seconds": 1})
    assert data_of(result)["status"] == "queued"
    assert result.content[0].text == "After 1 s it is still queued: call wait_for_run again to keep waiting."


def test_wait_for_run_waits_for_a_coming_judgment_unless_told_not_to(asgi_server, acme, acme_key):
    run = make_run(acme, judge=True, status=Run.Status.SUCCEEDED, success=True, output="Done.")
    url = f"{asgi_server}/mcp"

    waited = call(url, acme_key, "wait_for_run", {"run_id": run.public_id, "timeout_seconds": 1})
    assert data_of(waited)["judgment"] is None
    assert waited.content[0].text == "After 1 s its judgment is not in yet: call wait_for_run again to keep waiting."

    result = call(url, acme_key, "wait_for_run", {"run_id": run.public_id, "include_judgment": False})
    assert len(result.content) == 1 and data_of(result)["status"] == "succeeded"


def test_cancel_a_queued_run(asgi_server, acme, acme_key):
    run = make_run(acme)
    cancelled = data_of(call(f"{asgi_server}/mcp", acme_key, "cancel_run", {"run_id": run.public_id}))
    assert cancelled["status"] == "cancelled" and cancelled["error"]["code"] == "cancelled"
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED


def test_answer_input_answers_the_pending_question_and_resume_run_hands_a_paused_run_back(asgi_server, acme, acme_key):
    run = make_run(acme, status=Run.Status.RUNNING)
    asked = RunInput.objects.create(run=run, question="Colour?")
    url = f"{asgi_server}/mcp"

    answered = data_of(call(url, acme_key, "answer_input", {"run_id": run.public_id, "text": "Blue"}))
    again = call(url, acme_key, "answer_input", {"run_id": run.public_id, "text": "Red"})
    not_paused = call(url, acme_key, "resume_run", {"run_id": run.public_id, "note": "x"})
    Run.objects.filter(pk=run.pk).update(paused_at=timezone.now())
    resumed = data_of(call(url, acme_key, "resume_run", {"run_id": run.public_id, "note": "Signed in."}))

    assert answered["pending_input"] is None
    asked.refresh_from_db()
    assert (asked.state, asked.answer) == (RunInput.State.ANSWERED, "Blue")
    assert refusal(again) == "conflict: The run has no pending question to answer."
    assert refusal(not_paused) == "conflict: The run is not paused."
    assert resumed["paused"] is False
    assert RunMessage.objects.get(run=run).text == "Signed in."


def test_rejudging_a_run_that_has_not_finished_is_a_conflict(asgi_server, acme, acme_key):
    run = make_run(acme)
    result = call(f"{asgi_server}/mcp", acme_key, "rejudge_run", {"run_id": run.public_id})
    assert refusal(result) == "conflict: The run is queued; only a finished run can be judged again."
