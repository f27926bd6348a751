"""When the agent does not finish: the action-turn cap, the failure budget and prose replies bring the verdict turn."""

import pytest

from runs.models import Run
from scripted_api.wire import text_reply
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("runtime_worker", "transactional_db")]

SONNET_5_5 = "claude-sonnet-5-5"  # refuses a forced tool_choice with HTTP 400


def no_request_forces_a_tool(requests: list[dict]) -> bool:
    return all((request.get("tool_choice") or {}).get("type") not in ("tool", "any") for request in requests)


def verdict_request_text(request: dict) -> str:
    """The text blocks of a request's last user message, where the runtime asks for the verdict."""
    return "\n".join(block.get("text", "") for block in request["messages"][-1]["content"] if block["type"] == "text")


def test_the_request_after_the_last_action_turn_asks_for_done_without_forcing_it_and_refuses_other_tools(
    acme, site, messages_stub
):
    messages_stub.agent(
        browser("get_page_text"),
        browser("read_page"),
        browser("navigate", url=f"{site}/index.html"),  # on the verdict turn: refused
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=2, model=SONNET_5_5)

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
    assert no_request_forces_a_tool(requests)
    assert "verdict turn" in verdict_request_text(requests[2])
    assert "verdict turn" not in verdict_request_text(requests[1])
    refused = events(run, "agent.tool_result")[-1].payload
    assert refused["name"] == "navigate"
    assert refused["is_error"] is True
    assert refused["content"].startswith("verdict_required:")
    assert len(events(run, "agent.tool_result")) == 3  # the refused navigate never reached the browser
    assert all(event.payload.get("url") != f"{site}/index.html" for event in events(run, "agent.tool_result"))


def test_a_cap_run_on_sonnet_5_5_succeeds_when_done_is_called_on_the_verdict_turn_and_no_tool_is_forced(
    acme, site, messages_stub
):
    messages_stub.agent(browser("get_page_text"), done(True, "Three products."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=1, model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.signals["verdict_turn"] == "cap"
    assert run.signals["verdict_followed"] is True
    assert len(messages_stub.requests) == 2
    assert no_request_forces_a_tool(messages_stub.requests)
    assert "verdict turn" in verdict_request_text(messages_stub.requests[1])


def test_a_run_whose_model_ignores_the_verdict_turn_ends_agent_limit_with_the_verdict_not_followed(
    acme, site, messages_stub
):
    messages_stub.agent(browser("get_page_text"), text_reply("The shop sells kettles, toasters and mixers."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=1, model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.AGENT_LIMIT
    assert run.signals["verdict_turn"] == "cap"
    assert run.signals["verdict_followed"] is False
    assert len(messages_stub.requests) == 2
    assert no_request_forces_a_tool(messages_stub.requests)


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
    assert no_request_forces_a_tool(requests)
    assert "verdict turn" in verdict_request_text(requests[5])
    results = events(run, "agent.tool_result")
    assert all(event.payload["is_error"] for event in results)


def test_prose_twice_is_agent_incomplete_after_two_requests_the_second_being_the_verdict_turn(
    acme, site, messages_stub
):
    messages_stub.agent(
        text_reply("The shop sells kettles."),
        text_reply("As I said, kettles."),
        text_reply("Kettles, really."),  # never asked for
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.AGENT_INCOMPLETE
    assert run.signals["verdict_turn"] == "prose"
    assert run.signals["verdict_followed"] is False
    requests = messages_stub.requests
    assert len(requests) == 2
    assert messages_stub.remaining() == 1
    ask = requests[1]["messages"][-1]
    assert ask["role"] == "user"
    assert "call done" in verdict_request_text(requests[1])
    assert "verdict turn" in verdict_request_text(requests[1])
    assert no_request_forces_a_tool(requests)
    assert [event.payload["text"] for event in events(run, "agent.message")] == [
        "The shop sells kettles.",
        "As I said, kettles.",
    ]


def test_a_browser_action_on_the_prose_verdict_turn_is_refused_and_the_run_is_agent_incomplete(
    acme, site, messages_stub
):
    messages_stub.agent(text_reply("The shop sells kettles."), browser("get_page_text"))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.error_code == Run.ErrorCode.AGENT_INCOMPLETE
    assert run.signals["verdict_followed"] is False
    refused = events(run, "agent.tool_result")[-1].payload
    assert refused["content"].startswith("verdict_required:")
    assert run.signals["turns"] == 0


def test_prose_then_done_when_asked_is_a_followed_verdict(acme, site, messages_stub):
    messages_stub.agent(text_reply("Three products are listed."), done(True, "Three products are listed."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.output == "Three products are listed."
    assert run.signals["verdict_turn"] == "prose"
    assert run.signals["verdict_followed"] is True
    assert len(messages_stub.requests) == 2
