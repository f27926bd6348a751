"""When the agent does not finish: the action-turn cap, the failure budget and prose replies bring the verdict turn."""

import pytest

from runs.models import Run
from runs.scripted.wire import text_reply
from tests import messages_stub as stub_fixtures
from tests import runtime_support
from tests.runtime_support import browser, done, events, finished, launch

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = runtime_support.runtime_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("runtime_worker", "transactional_db")]

FORCED_DONE = {"type": "tool", "name": "done"}


def test_the_request_after_the_last_action_turn_forces_done_and_refuses_other_tools(acme, site, messages_stub):
    messages_stub.agent(
        browser("get_page_text"),
        browser("read_page"),
        browser("navigate", url=f"{site}/index.html"),  # on the verdict turn: refused
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=2)

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.AGENT_LIMIT
    assert "2 action turns" in run.error_message
    assert run.signals["turns"] == 2
    assert run.signals["max_turns"] == 2
    assert run.signals["verdict_turn"] == "cap"
    assert run.signals["verdict_followed"] is False
    requests = messages_stub.requests
    assert len(requests) == 3
    assert "tool_choice" not in requests[1]
    assert requests[2]["tool_choice"] == FORCED_DONE
    refused = events(run, "agent.tool_result")[-1].payload
    assert refused["name"] == "navigate"
    assert refused["is_error"] is True
    assert refused["content"].startswith("verdict_required:")
    assert len(events(run, "agent.tool_result")) == 3  # the refused navigate never reached the browser
    assert all(event.payload.get("url") != f"{site}/index.html" for event in events(run, "agent.tool_result"))


def test_done_on_the_verdict_turn_records_the_verdict_as_given(acme, site, messages_stub):
    messages_stub.agent(browser("get_page_text"), done(True, "Three products."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=1)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.signals["verdict_turn"] == "cap"
    assert run.signals["verdict_followed"] is True
    assert messages_stub.requests[1]["tool_choice"] == FORCED_DONE


def test_five_consecutive_tool_errors_bring_the_verdict_turn_forward(acme, site, messages_stub):
    # an unknown member fails at once, without waiting on the page
    messages_stub.agent(*[browser("no_such_member", attempt=n) for n in range(5)], text_reply("I give up."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=20)

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.AGENT_LIMIT
    assert run.signals["failures_max"] is True
    assert run.signals["verdict_turn"] == "failures"
    assert run.signals["verdict_followed"] is False
    assert run.signals["turns"] == 5
    requests = messages_stub.requests
    assert len(requests) == 6
    assert "tool_choice" not in requests[4]
    assert requests[5]["tool_choice"] == FORCED_DONE
    results = events(run, "agent.tool_result")
    assert all(event.payload["is_error"] for event in results)


def test_prose_is_asked_once_for_done_then_a_verdict_turn_without_done_is_agent_incomplete(acme, site, messages_stub):
    messages_stub.agent(
        text_reply("The shop sells kettles."),
        text_reply("As I said, kettles."),
        text_reply("Kettles, really."),
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.AGENT_INCOMPLETE
    assert run.signals["verdict_turn"] == "prose"
    assert run.signals["verdict_followed"] is False
    requests = messages_stub.requests
    assert len(requests) == 3
    ask = requests[1]["messages"][-1]
    assert ask["role"] == "user"
    assert "call done" in ask["content"][0]["text"]
    assert "tool_choice" not in requests[1]
    assert requests[2]["tool_choice"] == FORCED_DONE
    assert [event.payload["text"] for event in events(run, "agent.message")] == [
        "The shop sells kettles.",
        "As I said, kettles.",
        "Kettles, really.",
    ]


def test_prose_then_done_when_asked_is_a_followed_verdict(acme, site, messages_stub):
    messages_stub.agent(text_reply("Three products are listed."), done(True, "Three products are listed."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.output == "Three products are listed."
    assert run.signals["verdict_turn"] == "prose"
    assert run.signals["verdict_followed"] is True
    assert len(messages_stub.requests) == 2
