"""Today's models through a real worker and Chromium: thinking blocks sent back as received, the text between tool
calls in the timeline, and every stop_reason the Messages API answers with."""

import itertools

import pytest

from runs.models import Run
from scripted_api.wire import empty_reply, max_tokens_reply, refusal_reply, text_reply, tool_use_block
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("runtime_worker", "transactional_db")]

SONNET_5_5 = "claude-sonnet-5-5"


def assistant_turns(request: dict) -> list[list[dict]]:
    return [message["content"] for message in request["messages"] if message["role"] == "assistant"]


def test_thinking_blocks_round_trip_unchanged_over_a_ten_turn_run(acme, site, messages_stub):
    replies = [
        browser("get_page_text" if turn % 2 else "read_page", thinking=f"Turn {turn}: reading the shop again.")
        for turn in range(9)
    ]
    messages_stub.agent(*replies, done(True, "Kettle, Toaster, Mixer.", thinking="Turn 9: I have what I need."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=20, model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error_message  # the stub refuses an altered thinking block
    requests = messages_stub.requests
    assert len(requests) == 10
    assert all(request["thinking"]["type"] == "adaptive" for request in requests)
    for earlier, later in itertools.pairwise(requests[1:]):
        # each request carries every earlier assistant turn exactly as the one before it did
        assert assistant_turns(later)[: len(assistant_turns(earlier))] == assistant_turns(earlier)
    last = assistant_turns(requests[-1])
    assert len(last) == 9
    for turn, content in enumerate(last):
        thinking, use = content
        assert thinking["type"] == "thinking"
        assert thinking["thinking"] == f"Turn {turn}: reading the shop again."
        assert thinking["signature"]
        assert set(thinking) == {"type", "thinking", "signature"}  # nothing added, nothing dropped
        assert use["type"] == "tool_use"


def test_the_text_between_tool_calls_appears_in_the_timeline_as_claudes_messages(acme, site, messages_stub):
    messages_stub.agent(
        browser("get_page_text", thinking="I'll read the product list first."),
        done(True, "Three products.", thinking="The list has three products; reporting them."),
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    # the request asked for the text to be shown, or it would come back empty
    assert messages_stub.requests[0]["thinking"]["display"]
    messages = [event.payload for event in events(run, "agent.message")]
    assert [(message["text"], message["source"], message["turn"]) for message in messages] == [
        ("I'll read the product list first.", "thinking", 1),
        ("The list has three products; reporting them.", "thinking", 2),
    ]


def test_a_tool_call_cut_off_at_max_tokens_is_not_executed_and_the_next_request_may_say_more(acme, site, messages_stub):
    cut = tool_use_block("navigate", {"url": f"{site}/index"}, toolset_name="browser")
    messages_stub.agent(
        max_tokens_reply(text="Opening the index page", tool=cut),
        browser("get_page_text"),
        done(True, "Three products."),
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    results = [event.payload for event in events(run, "agent.tool_result")]
    assert results[0]["name"] == "navigate"
    assert results[0]["is_error"] is True
    assert results[0]["content"].startswith("Not executed: your reply was cut off")
    assert all("index" not in (result.get("url") or "") for result in results)  # the browser never went there
    assert run.signals["turns"] == 1
    first, second, _ = messages_stub.requests
    told = second["messages"][-1]["content"]
    assert told[0]["type"] == "tool_result" and told[0]["is_error"] is True
    assert "cut off at its limit" in told[-1]["text"]
    assert second["max_tokens"] > first["max_tokens"]


def test_a_refusal_ends_the_run_failed_with_model_refused_and_the_refusal_text(acme, site, messages_stub):
    messages_stub.agent(browser("get_page_text"), refusal_reply("I can't help with buying that product."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.MODEL_REFUSED
    assert "I can't help with buying that product." in run.error_message
    assert events(run, "run.finished")[0].payload["error_code"] == "model_refused"


def test_an_empty_reply_is_never_sent_back_and_is_answered_once_with_a_nudge(acme, site, messages_stub):
    messages_stub.agent(empty_reply(), done(True, "Three products."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    second = messages_stub.requests[1]
    assert all(message["content"] for message in second["messages"])
    assert [message["role"] for message in second["messages"]] == ["user", "user"]
    assert "Your reply was empty" in second["messages"][-1]["content"][0]["text"]
    assert run.signals["verdict_turn"] == "none"


def test_empty_replies_bring_the_verdict_turn_then_end_the_run_agent_incomplete(acme, site, messages_stub):
    messages_stub.agent(empty_reply(), empty_reply(), empty_reply(), text_reply("never asked for"))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.error_code == Run.ErrorCode.AGENT_INCOMPLETE
    assert run.signals["verdict_turn"] == "prose"
    assert run.signals["verdict_followed"] is False
    assert len(messages_stub.requests) == 3
    assert "verdict turn" in messages_stub.requests[2]["messages"][-1]["content"][0]["text"]


def test_a_paused_turn_is_sent_back_as_it_is_for_the_model_to_continue(acme, site, messages_stub):
    messages_stub.agent(
        text_reply("Let me look at the shop first.", stop_reason="pause_turn"),
        done(True, "Three products."),
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    continued = messages_stub.requests[1]["messages"][-1]
    assert continued == {"role": "assistant", "content": [{"type": "text", "text": "Let me look at the shop first."}]}
    assert run.signals["verdict_turn"] == "none"


def test_a_conversation_past_the_context_window_ends_the_run_with_a_clear_message(acme, site, messages_stub):
    messages_stub.agent(browser("get_page_text"), text_reply("", stop_reason="model_context_window_exceeded"))
    run = launch(acme, start_url=f"{site}/runtime_shop.html", model=SONNET_5_5)

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.MODEL_ERROR
    assert "context window" in run.error_message
