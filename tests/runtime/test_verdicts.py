"""The agent's verdict through a real worker and Chromium: done as given, structured output and its schema checks."""

import json

import pytest

from agent_platform.models import ModelRequest
from runs.models import Run
from runs.presets import ITEMS_SCHEMA
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.factories import make_session
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("runtime_worker", "transactional_db")]


def test_done_with_success_ends_the_run_succeeded_with_the_agents_output(acme, site, messages_stub):
    messages_stub.agent(
        browser("get_page_text"),
        done(True, "Kettle 24.90, Toaster 39.00, Mixer 89.50"),
    )
    run = launch(
        acme,
        start_url=f"{site}/runtime_shop.html",
        judge_context=["SECRET-JUDGE-CONTEXT: the Mixer costs 89.50"],
    )

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.success is True
    assert run.output == "Kettle 24.90, Toaster 39.00, Mixer 89.50"
    assert run.error_code == ""
    types = [event.type for event in events(run)]
    assert types[0] == "run.started"
    assert types[-1] == "run.finished"
    assert types[-2] == "agent.final_view"
    assert types.count("agent.usage") == 2
    result = events(run, "agent.tool_result")[0].payload
    assert result["name"] == "get_page_text"
    assert "Mixer — 89.50" in result["content"]
    assert result["url"] == f"{site}/runtime_shop.html"
    assert result["is_error"] is False
    assert result["screenshot_url"].endswith(".jpg")  # the viewport image taken for the live view: a JPEG
    view = events(run, "agent.final_view")[0].payload
    assert view["url"] == f"{site}/runtime_shop.html"
    assert view["title"] == "Runtime shop"
    assert "Toaster" in view["text"]
    assert view["screenshot_url"].endswith(".png")
    assert run.signals["turns"] == 1
    assert run.signals["verdict_turn"] == "none"

    first = messages_stub.requests[0]
    assert first["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert [tool.get("type", tool.get("name")) for tool in first["tools"]] == [
        "browser_toolset_20260801",
        "done",
        "extract",
        "ask_human",
    ]
    assert f"Start URL: {site}/runtime_shop.html" in first["messages"][0]["content"][0]["text"]
    assert "tool_choice" not in first
    second = messages_stub.requests[1]
    assert second["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert all("SECRET-JUDGE-CONTEXT" not in json.dumps(request) for request in messages_stub.requests)


def test_done_with_failure_ends_the_run_failed_with_task_failed_and_the_agents_account(acme, site, messages_stub):
    messages_stub.agent(done(False, "The shop lists no blue kettles."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.success is False
    assert run.error_code == Run.ErrorCode.TASK_FAILED
    assert run.output == "The shop lists no blue kettles."
    finished_event = events(run, "run.finished")[0].payload
    assert finished_event["error_code"] == "task_failed"


def test_data_that_violates_the_schema_is_handed_back_and_corrected_data_is_accepted(acme, site, messages_stub):
    messages_stub.agent(
        done(True, "Three products.", data={"items": [{"name": "Kettle", "price": "24.90"}]}),
        done(True, "Three products.", data={"items": [{"name": "Kettle", "price": 24.9}]}),
    )
    session = make_session(acme, output_schema=ITEMS_SCHEMA)
    run = launch(acme, session=session, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.data == {"items": [{"name": "Kettle", "price": 24.9}]}
    violation = events(run, "agent.tool_result")[0].payload
    assert violation["is_error"] is True
    assert violation["content"].startswith("output_schema_violation:")
    assert "at $.items[0].price: '24.90' is not of type 'number'" in violation["content"]
    done_tool = messages_stub.requests[0]["tools"][1]
    # data is required when success is true only: JSON Schema's `required` cannot say that, the description does
    assert done_tool["input_schema"]["required"] == ["success", "output"]
    assert "data: required when success is true; optional when success is false" in done_tool["description"]
    assert done_tool["input_schema"]["properties"]["data"]["properties"] == ITEMS_SCHEMA["properties"]
    retry = messages_stub.requests[1]["messages"][-1]["content"][0]
    assert retry["is_error"] is True
    assert retry["content"][0]["text"].startswith("output_schema_violation:")


def test_under_an_output_schema_a_failure_without_data_is_accepted_and_data_given_is_checked(acme, site, messages_stub):
    messages_stub.agent(
        done(False, "The shop shows no prices.", data={"items": "none"}),
        done(False, "The shop shows no prices."),
    )
    session = make_session(acme, output_schema=ITEMS_SCHEMA)
    run = launch(acme, session=session, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert (run.status, run.error_code, run.success) == (Run.Status.FAILED, Run.ErrorCode.TASK_FAILED, False)
    assert run.output == "The shop shows no prices."
    assert run.data is None
    checked = events(run, "agent.tool_result")[0].payload
    assert checked["is_error"] is True
    assert "at $.items: 'none' is not of type 'array'" in checked["content"]
    assert (
        "When you report failure (success: false), data is optional" in messages_stub.requests[0]["system"][0]["text"]
    )


def test_a_run_whose_every_done_was_refused_says_so_with_the_validators_last_detail(acme, site, messages_stub):
    messages_stub.set_fallback(done(True, "Three products."))  # never with the data the schema requires
    session = make_session(acme, output_schema=ITEMS_SCHEMA)
    run = launch(acme, session=session, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert (run.status, run.error_code) == (Run.Status.FAILED, Run.ErrorCode.AGENT_LIMIT)
    assert "did not call done" not in run.error_message
    refused = len(messages_stub.requests)
    assert run.error_message == (
        "5 tool calls failed in a row, and every done the agent called was refused "
        f"({refused} calls); the last: output_schema_violation: at $: data is required by this run's output_schema "
        "when success is true"
    )
    assert (run.signals["verdict_turn"], run.signals["verdict_followed"]) == ("failures", False)


def test_data_over_64_kib_is_a_violation_too(acme, site, messages_stub):
    schema = {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}}}
    huge = {"notes": ["x" * 1000] * 70}
    messages_stub.agent(done(True, "All notes.", data=huge), done(True, "Fewer notes.", data={"notes": ["short"]}))
    run = launch(acme, session=make_session(acme, output_schema=schema))

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.data == {"notes": ["short"]}
    violation = events(run, "agent.tool_result")[0].payload["content"]
    assert violation.startswith("output_schema_violation:")
    assert "the limit is 65536 bytes" in violation


def test_usage_totals_of_the_run_equal_its_model_request_rows(acme, site, messages_stub):
    messages_stub.agent(browser("read_page"), browser("get_page_text"), done(True, "Read it."))
    # A task long enough that the first request's prefix passes the model's minimum cacheable prompt (512 tokens on
    # Sonnet 5.5), as a real agent's system prompt, tools and task do.
    task = "Read the shop page and report what it lists. " + "Note every product name and price exactly. " * 60
    run = launch(acme, task=task, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    rows = ModelRequest.objects.filter(run=run)
    assert rows.count() == 3 == run.usage_requests, (run.status, run.error_code, run.error_message)
    assert {row.source for row in rows} == {"agent"}
    assert sum(row.input_tokens for row in rows) == run.usage_input
    assert sum(row.output_tokens for row in rows) == run.usage_output
    assert sum(row.cache_read_input_tokens for row in rows) == run.usage_cache_read
    assert sum(row.cache_creation_input_tokens for row in rows) == run.usage_cache_write
    assert sum(row.cost_usd for row in rows) == run.cost_usd
    assert run.usage_cache_read > 0  # the conversation prefix is read back from the cache from the second turn on
    usage_events = [event.payload for event in events(run, "agent.usage")]
    assert [event["input_tokens"] for event in usage_events] == [row.input_tokens for row in rows.order_by("id")]
