"""The Messages stub answers the real anthropic SDK the way the API does: replies, tool use, errors, retries, caching."""

import base64
import json
import struct
import threading

import anthropic
import pytest
from anthropic.types import TextBlock, ToolUseBlock
from anthropic.types.beta import BetaToolUseBlock

from judge.prompts import GRADER_SYSTEM, JUDGE_SYSTEM
from scripted_api.stub import GRADER_TOOL, JUDGE_TOOL, MessagesStub
from scripted_api.wire import (
    WireServer,
    dropped_connection,
    empty_reply,
    error_reply,
    json_reply,
    max_tokens_reply,
    multi_tool_use_reply,
    overloaded,
    rate_limited,
    refusal_reply,
    text_reply,
    tool_use_block,
    tool_use_reply,
)
from tests import messages_stub as stub_fixtures

# The fixtures, bound here until the shared conftest imports them for every test module.
messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

MODEL = "claude-sonnet-5-5"
HELLO = [{"role": "user", "content": "Hello"}]


def client_for(stub: MessagesStub, max_retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=stub.base_url, api_key="x", max_retries=max_retries)


def test_text_reply_reaches_the_sdk_as_a_text_block(messages_stub):
    messages_stub.agent(text_reply("Hi there"))

    message = client_for(messages_stub).messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert isinstance(message.content[0], TextBlock)
    assert message.content[0].text == "Hi there"
    assert message.model == MODEL
    assert message.stop_reason == "end_turn"
    assert message.id.startswith("msg_")
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0


def test_tool_use_reply_is_parsed_into_a_tool_use_block(messages_stub):
    messages_stub.agent(tool_use_reply("done", {"success": True, "output": "ok"}, text="Finishing."))

    message = client_for(messages_stub).messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert message.stop_reason == "tool_use"
    assert message.content[0].text == "Finishing."
    tool_use = message.content[1]
    assert isinstance(tool_use, ToolUseBlock)
    assert tool_use.name == "done"
    assert tool_use.input == {"success": True, "output": "ok"}
    assert tool_use.id.startswith("toolu_")


def test_browser_member_tool_use_carries_its_toolset_name_through_the_beta_client(messages_stub):
    messages_stub.agent(
        multi_tool_use_reply(
            [
                tool_use_block("navigate", {"url": "http://127.0.0.1/demo/"}, toolset_name="browser"),
                tool_use_block("get_page_text", {}, toolset_name="browser"),
            ]
        )
    )

    message = client_for(messages_stub).beta.messages.create(
        model=MODEL, max_tokens=100, messages=HELLO, tools=[{"type": "browser_toolset_20260801"}]
    )

    assert [type(block) for block in message.content] == [BetaToolUseBlock, BetaToolUseBlock]
    assert [(block.name, block.toolset_name) for block in message.content] == [
        ("navigate", "browser"),
        ("get_page_text", "browser"),
    ]
    assert message.content[0].input == {"url": "http://127.0.0.1/demo/"}
    assert messages_stub.requests[0]["tools"] == [{"type": "browser_toolset_20260801"}]


def test_overloaded_is_retried_by_the_sdk_then_succeeds(messages_stub):
    messages_stub.agent(error_reply(529, retry_after_seconds=0.01), text_reply("after the storm"))

    message = client_for(messages_stub, max_retries=2).messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert message.content[0].text == "after the storm"
    assert len(messages_stub.requests) == 2


def test_errors_past_the_retry_budget_raise_the_status_error(messages_stub):
    messages_stub.agent(*[error_reply(529, retry_after_seconds=0.01)] * 2)

    with pytest.raises(anthropic.APIStatusError) as raised:
        client_for(messages_stub, max_retries=1).messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert raised.value.status_code == 529
    assert raised.value.body["error"]["type"] == "overloaded_error"
    assert messages_stub.remaining() == 0


def test_bad_request_is_not_retried(messages_stub):
    messages_stub.agent(error_reply(400, "invalid_request_error", "max_tokens: too large"), text_reply("unused"))

    with pytest.raises(anthropic.BadRequestError, match="max_tokens: too large"):
        client_for(messages_stub, max_retries=3).messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert messages_stub.remaining() == 1


def test_an_empty_queue_fails_loudly(messages_stub):
    with pytest.raises(anthropic.BadRequestError, match="no scripted reply left for queue agent"):
        client_for(messages_stub).messages.create(model=MODEL, max_tokens=100, messages=HELLO)


def test_a_dropped_connection_is_a_connection_error_the_sdk_retries(messages_stub):
    messages_stub.agent(dropped_connection(), text_reply("reconnected"))
    client = client_for(messages_stub, max_retries=1)

    message = client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert message.content[0].text == "reconnected"
    messages_stub.agent(dropped_connection())
    with pytest.raises(anthropic.APIConnectionError):
        client_for(messages_stub).messages.create(model=MODEL, max_tokens=100, messages=HELLO)


def test_a_slow_reply_times_the_client_out(messages_stub):
    messages_stub.agent(error_reply(529, delay_seconds=1.0))

    with pytest.raises(anthropic.APITimeoutError):
        anthropic.Anthropic(base_url=messages_stub.base_url, api_key="x", max_retries=0, timeout=0.2).messages.create(
            model=MODEL, max_tokens=100, messages=HELLO
        )


def test_judge_and_grader_requests_are_routed_to_their_queues_by_their_system_prompt(messages_stub):
    messages_stub.agent(text_reply("agent turn"))
    messages_stub.judge(tool_use_reply(JUDGE_TOOL, {"verdict": "pass"}))
    messages_stub.grader(tool_use_reply(GRADER_TOOL, {"result": "satisfied"}))
    client = client_for(messages_stub)

    judged = client.messages.create(
        model=MODEL, max_tokens=100, system=JUDGE_SYSTEM, messages=HELLO, tools=[_tool(JUDGE_TOOL)]
    )
    graded = client.messages.create(
        model=MODEL,
        max_tokens=100,
        system=[{"type": "text", "text": GRADER_SYSTEM}],
        messages=HELLO,
        tools=[_tool(GRADER_TOOL)],
    )
    agent = client.messages.create(model=MODEL, max_tokens=100, system="You drive a browser.", messages=HELLO)

    assert judged.content[0].input == {"verdict": "pass"}
    assert graded.content[0].input == {"result": "satisfied"}
    assert agent.content[0].text == "agent turn"
    assert len(messages_stub.requests_for("judge")) == 1
    assert len(messages_stub.requests_for("grader")) == 1
    assert len(messages_stub.requests_for("agent")) == 1
    assert len(messages_stub.requests) == 3


def test_a_callable_reply_sees_the_request(messages_stub):
    messages_stub.agent(lambda request: text_reply(f"you said {request['messages'][-1]['content']}"))

    message = client_for(messages_stub).messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert message.content[0].text == "you said Hello"


def test_a_fallback_answers_whenever_its_queue_is_empty(messages_stub):
    messages_stub.set_fallback(text_reply("again"))
    client = client_for(messages_stub)

    texts = [client.messages.create(model=MODEL, max_tokens=10, messages=HELLO).content[0].text for _ in range(3)]

    assert texts == ["again"] * 3


def test_concurrent_requests_are_all_recorded_and_each_reply_served_once(messages_stub):
    messages_stub.agent(*[text_reply(f"reply {n}") for n in range(8)])
    client = client_for(messages_stub)
    texts: list[str] = []

    def ask() -> None:
        texts.append(client.messages.create(model=MODEL, max_tokens=10, messages=HELLO).content[0].text)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(texts) == sorted(f"reply {n}" for n in range(8))
    assert len(messages_stub.requests) == 8


def test_scripted_usage_is_reported_verbatim(messages_stub):
    usage = {"input_tokens": 11, "output_tokens": 22, "cache_creation_input_tokens": 33, "cache_read_input_tokens": 44}
    messages_stub.agent(text_reply("counted", usage=usage))

    message = client_for(messages_stub).messages.create(model=MODEL, max_tokens=10, messages=HELLO)

    assert message.usage.model_dump(include=set(usage)) == usage


def test_a_repeated_cached_prefix_is_read_from_the_cache(messages_stub):
    messages_stub.set_fallback(text_reply("ok"))
    client = client_for(messages_stub)
    system = [{"type": "text", "text": "You drive a browser. " * 200, "cache_control": {"type": "ephemeral"}}]

    first = client.messages.create(model=MODEL, max_tokens=10, system=system, messages=HELLO).usage
    second = client.messages.create(model=MODEL, max_tokens=10, system=system, messages=HELLO).usage

    assert first.cache_creation_input_tokens > 900
    assert first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0
    assert second.input_tokens == first.input_tokens


def test_a_growing_conversation_reads_the_earlier_prefix_and_writes_only_the_new_part(messages_stub):
    messages_stub.set_fallback(text_reply("ok"))
    client = client_for(messages_stub)
    system = [{"type": "text", "text": "You drive a browser. " * 200}]
    turn_one = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "Task: " + "x" * 400, "cache_control": {"type": "ephemeral"}}],
        }
    ]
    turn_two = [
        {"role": "user", "content": [{"type": "text", "text": "Task: " + "x" * 400}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]},
        {"role": "user", "content": [{"type": "text", "text": "Go on " * 100, "cache_control": {"type": "ephemeral"}}]},
    ]

    first = client.messages.create(model=MODEL, max_tokens=10, system=system, messages=turn_one).usage
    second = client.messages.create(model=MODEL, max_tokens=10, system=system, messages=turn_two).usage
    other_model = client.messages.create(model="claude-opus-5-5", max_tokens=10, system=system, messages=turn_two).usage

    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert 0 < second.cache_creation_input_tokens < first.cache_creation_input_tokens
    assert other_model.cache_read_input_tokens == 0


def test_streaming_adds_up_to_the_same_message(messages_stub):
    messages_stub.agent(tool_use_reply("done", {"success": True, "output": "streamed " * 20}, text="Done now."))

    with client_for(messages_stub).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        message = stream.get_final_message()

    assert message.content[0].text == "Done now."
    assert message.content[1].input == {"success": True, "output": "streamed " * 20}
    assert message.stop_reason == "tool_use"
    assert message.usage.output_tokens > 1


def test_count_tokens_grows_with_the_prompt(messages_stub):
    client = client_for(messages_stub)

    short = client.messages.count_tokens(model=MODEL, messages=HELLO).input_tokens
    long = client.messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "Hello " * 500}]
    ).input_tokens

    assert 0 < short < long
    assert messages_stub.requests == []


def test_the_fixture_points_the_environment_at_the_stub(messages_stub):
    messages_stub.agent(text_reply("from the environment"))

    message = anthropic.Anthropic(max_retries=0).messages.create(model=MODEL, max_tokens=10, messages=HELLO)

    assert message.content[0].text == "from the environment"
    headers = messages_stub.server.received[-1].headers
    # SDK 2.x sends the key as a bearer token; older ones used x-api-key.
    assert "test-key" in (headers.get("authorization") or headers["x-api-key"])


def test_a_wire_server_is_a_context_manager_that_frees_its_port():
    with WireServer(lambda request: text_reply("solo")) as server:
        base_url = server.base_url
        reply = anthropic.Anthropic(base_url=base_url, api_key="x", max_retries=0).messages.create(
            model=MODEL, max_tokens=10, messages=HELLO
        )
    assert reply.content[0].text == "solo"
    with pytest.raises(anthropic.APIConnectionError):
        anthropic.Anthropic(base_url=base_url, api_key="x", max_retries=0).messages.create(
            model=MODEL, max_tokens=10, messages=HELLO
        )


def _tool(name: str) -> dict:
    return {"name": name, "description": name, "input_schema": {"type": "object", "properties": {}}}


# --- the stub is as strict as the API: each rule broken on purpose ------------------------------------------------

TOOL_ID = "toolu_0123456789abcdef01234567"
OTHER_ID = "toolu_0123456789abcdef76543210"
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _asks(tool_id: str = TOOL_ID, **extra) -> dict:
    return {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "done", "input": {}, **extra}]}


def _result(tool_id: str = TOOL_ID, **extra) -> dict:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": "ok", **extra}


def _image() -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1X1}}


def _cached(text: str) -> dict:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}


RULE_BREAKERS = {
    "unknown_model": {"model": "claude-nonexistent-9"},
    "retired_model": {"model": "claude-3-opus-20240229"},
    # An explicit timeout: without one the SDK itself refuses a large max_tokens unless streamed.
    "max_tokens": {"max_tokens": 128_001, "timeout": 30},
    "messages_required": {"messages": []},
    "message_role": {"messages": [{"role": "tool", "content": "Hello"}]},
    "system_message_text": {"messages": [*HELLO, {"role": "system", "content": [_image()]}]},
    "first_message_user": {"messages": [{"role": "assistant", "content": "Hi"}, *HELLO]},
    "nonempty_message": {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
    "tool_use_answered": {"messages": [*HELLO, _asks(), {"role": "user", "content": "go on"}]},
    "tool_results_first": {
        "messages": [*HELLO, _asks(), {"role": "user", "content": [{"type": "text", "text": "x"}, _result()]}]
    },
    "tool_results_in_order": {
        "messages": [
            *HELLO,
            {"role": "assistant", "content": [*_asks()["content"], *_asks(OTHER_ID)["content"]]},
            {"role": "user", "content": [_result(OTHER_ID), _result()]},
        ]
    },
    "tool_result_orphan": {"messages": [*HELLO, _asks(), {"role": "user", "content": [_result(), _result(OTHER_ID)]}]},
    "toolset_result_name": {
        "messages": [*HELLO, _asks(toolset_name="browser"), {"role": "user", "content": [_result()]}]
    },
    "cache_control_limit": {
        "system": [_cached(f"part {n}") for n in range(3)],
        "messages": [{"role": "user", "content": [_cached("one"), _cached("two")]}],
    },
    "image_limit": {"messages": [{"role": "user", "content": [_image() for _ in range(101)]}]},
    "context_window": {"model": "claude-test-200k", "messages": [{"role": "user", "content": "word " * 170_000}]},
    "forced_tool_choice": {"tools": [_tool("done")], "tool_choice": {"type": "tool", "name": "done"}},
    "thinking_type": {"thinking": {"type": "disabled"}},
    "thinking_effort": {"thinking": {"type": "between_tools"}, "output_config": {"effort": "max"}},
    "effort_level": {"model": "claude-haiku-5-5", "output_config": {"effort": "xhigh"}},
    # The SDK's create() no longer takes sampling parameters at all: they can only be smuggled in.
    "sampling_params": {"extra_body": {"temperature": 0.2}},
}


def refused(stub: MessagesStub, rule: str, **params) -> anthropic.APIStatusError:
    """Send a request breaking `rule` and return the SDK's error; the stub must have refused it for that rule."""
    stub.expect_refusal(rule)
    request = {"model": MODEL, "max_tokens": 100, "messages": HELLO, **params}
    with pytest.raises(anthropic.APIStatusError) as raised:
        client_for(stub).beta.messages.create(**request)
    assert raised.value.body["error"]["message"].startswith(f"rule {rule}: ")
    assert stub.refused_rules() == [rule]
    return raised.value


@pytest.mark.parametrize("rule", sorted(RULE_BREAKERS))
def test_a_request_breaking_a_rule_is_refused_with_the_rules_name(messages_stub, rule):
    messages_stub.set_fallback(text_reply("must not be served"))

    error = refused(messages_stub, rule, **RULE_BREAKERS[rule])

    expected_status = 404 if rule in ("unknown_model", "retired_model") else 400
    assert error.status_code == expected_status
    assert messages_stub.requests == []  # a refused request never reaches a queue


def test_every_rule_the_stub_enforces_has_a_breaking_request():
    from scripted_api.validation import RULES

    thinking_rules = {"thinking_signature", "thinking_kept"}  # need an issued block: see the tests below
    assert set(RULES) == set(RULE_BREAKERS) | thinking_rules | {"request_too_large"}


def test_a_body_over_32_mb_is_refused_as_too_large(messages_stub):
    error = refused(messages_stub, "request_too_large", messages=[{"role": "user", "content": "x" * (32 * 2**20)}])

    assert error.status_code == 413


def test_consecutive_messages_of_one_role_and_an_empty_final_assistant_message_are_accepted(messages_stub):
    messages_stub.agent(text_reply("joined"))
    messages = [
        {"role": "user", "content": "Hello"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": TOOL_ID, "name": "done", "input": {}}]},
        {"role": "user", "content": [_result()]},
        {"role": "user", "content": "and then"},
        {"role": "assistant", "content": ""},
    ]

    message = client_for(messages_stub).beta.messages.create(model=MODEL, max_tokens=10, messages=messages)

    assert message.content[0].text == "joined"


def test_a_system_message_of_text_inside_the_conversation_is_accepted(messages_stub):
    # The SDK's SystemMessageParam: today's Claude Code sends its environment this way, after the first user message.
    messages_stub.agent(text_reply("noted"))
    messages = [*HELLO, {"role": "system", "content": [{"type": "text", "text": "The user's time zone is UTC."}]}]

    reply = client_for(messages_stub).beta.messages.create(model=MODEL, max_tokens=64, messages=messages)

    assert reply.content[0].text == "noted"
    assert messages_stub.requests[0]["messages"][1]["role"] == "system"


def test_forcing_a_tool_and_sampling_are_accepted_on_models_that_allow_them(messages_stub):
    messages_stub.agent(tool_use_reply("done", {}), text_reply("sampled"))
    client = client_for(messages_stub)

    forced = client.beta.messages.create(
        model="claude-sonnet-4-6",
        max_tokens=10,
        messages=HELLO,
        tools=[_tool("done")],
        tool_choice={"type": "tool", "name": "done"},
    )
    sampled = client.beta.messages.create(
        model="claude-sonnet-4-6", max_tokens=10, messages=HELLO, extra_body={"temperature": 0.2}
    )

    assert forced.content[0].name == "done"
    assert sampled.content[0].text == "sampled"


def test_an_unexpected_refusal_is_reported_until_the_test_expects_it(messages_stub):
    with pytest.raises(anthropic.BadRequestError):
        client_for(messages_stub).beta.messages.create(model=MODEL, max_tokens=10, messages=[])

    assert [refusal.rule for refusal in messages_stub.unexpected_refusals()] == ["messages_required"]
    messages_stub.expect_refusal("messages_required")
    assert messages_stub.unexpected_refusals() == []


# --- thinking blocks: signed, shown as asked, and checked when they come back ---------------------------------------


def _thinking_turn(stub: MessagesStub, **params):
    stub.agent(tool_use_reply("navigate", {"url": "http://x/"}, toolset_name="browser", thinking="Opening the shop."))
    return client_for(stub).beta.messages.create(model=MODEL, max_tokens=100, messages=HELLO, **params)


def _send_back(stub: MessagesStub, first, content: list[dict], *, model: str = MODEL):
    tool_use = first.content[-1]
    messages = [
        *HELLO,
        {"role": "assistant", "content": content},
        {"role": "user", "content": [_result(tool_use.id, toolset_name="browser")]},
    ]
    return client_for(stub).beta.messages.create(model=model, max_tokens=100, messages=messages)


def test_thinking_text_comes_back_only_when_the_request_asks_for_it(messages_stub):
    hidden = _thinking_turn(messages_stub)
    shown = _thinking_turn(messages_stub, thinking={"type": "adaptive", "display": "updates"})
    between = _thinking_turn(messages_stub, thinking={"type": "between_tools"})

    assert (hidden.content[0].type, hidden.content[0].thinking) == ("thinking", "")
    assert shown.content[0].thinking == "Opening the shop."
    assert between.content[0].thinking == "Opening the shop."
    assert all(reply.content[0].signature for reply in (hidden, shown, between))


def test_a_model_without_thinking_by_default_sends_no_thinking_block(messages_stub):
    messages_stub.agent(text_reply("plain", thinking="unseen"))

    message = client_for(messages_stub).beta.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=HELLO)

    assert [block.type for block in message.content] == ["text"]


def test_thinking_streams_with_its_signature(messages_stub):
    messages_stub.agent(text_reply("after thought", thinking="Let me think."))

    with client_for(messages_stub).beta.messages.stream(
        model=MODEL, max_tokens=100, messages=HELLO, thinking={"type": "adaptive", "display": "summarized"}
    ) as stream:
        message = stream.get_final_message()

    assert message.content[0].thinking == "Let me think."
    assert message.content[0].signature
    assert message.content[1].text == "after thought"


def test_a_thinking_block_sent_back_unchanged_is_accepted(messages_stub):
    first = _thinking_turn(messages_stub, thinking={"type": "between_tools"})
    messages_stub.agent(text_reply("next"))

    second = _send_back(messages_stub, first, [block.model_dump() for block in first.content])

    assert second.content[0].text == "next"


def test_an_edited_thinking_block_is_refused(messages_stub):
    first = _thinking_turn(messages_stub, thinking={"type": "between_tools"})
    content = [block.model_dump() for block in first.content]
    content[0]["thinking"] += " (edited)"
    messages_stub.expect_refusal("thinking_signature")

    with pytest.raises(anthropic.BadRequestError, match="rule thinking_signature: "):
        _send_back(messages_stub, first, content)


def test_a_thinking_block_moved_to_another_models_conversation_is_refused(messages_stub):
    first = _thinking_turn(messages_stub, thinking={"type": "between_tools"})
    messages_stub.expect_refusal("thinking_signature")

    with pytest.raises(anthropic.BadRequestError, match="rule thinking_signature: "):
        _send_back(messages_stub, first, [block.model_dump() for block in first.content], model="claude-opus-5-5")


def test_an_assistant_turn_sent_back_without_its_thinking_block_is_refused(messages_stub):
    first = _thinking_turn(messages_stub, thinking={"type": "between_tools"})
    messages_stub.expect_refusal("thinking_kept")

    with pytest.raises(anthropic.BadRequestError, match="rule thinking_kept: "):
        _send_back(messages_stub, first, [block.model_dump() for block in first.content[1:]])


# --- the other replies the API can give ------------------------------------------------------------------------------


def test_a_max_tokens_reply_carries_its_cut_off_tool_call(messages_stub):
    messages_stub.agent(max_tokens_reply(text="Filling in", tool=tool_use_block("form_input", {"value": "Ada Lo"})))

    message = client_for(messages_stub).beta.messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert message.stop_reason == "max_tokens"
    assert (message.content[-1].name, message.content[-1].input) == ("form_input", {"value": "Ada Lo"})


def test_a_refusal_and_an_empty_reply_have_their_stop_reasons(messages_stub):
    messages_stub.agent(refusal_reply("I can't help with that."), empty_reply())
    client = client_for(messages_stub)

    refusal = client.beta.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    empty = client.beta.messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    assert (refusal.stop_reason, refusal.content[0].text) == ("refusal", "I can't help with that.")
    assert (empty.stop_reason, empty.content) == ("end_turn", [])


def test_rate_limits_and_overload_send_retry_after(messages_stub):
    messages_stub.agent(rate_limited(2), overloaded(3))
    client = client_for(messages_stub)

    with pytest.raises(anthropic.RateLimitError) as limited:
        client.beta.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    with pytest.raises(anthropic.APIStatusError) as busy:
        client.beta.messages.create(model=MODEL, max_tokens=10, messages=HELLO)

    assert limited.value.response.headers["retry-after"] == "2"
    assert limited.value.response.headers["retry-after-ms"] == "2000"
    assert (busy.value.status_code, busy.value.response.headers["retry-after"]) == (529, "3")


def test_a_structured_output_reply_is_the_json_text_given(messages_stub):
    messages_stub.agent(json_reply({"verdict": "pass", "reason": "ok"}))
    output_config = {"format": {"type": "json_schema", "schema": {"type": "object"}}}

    message = client_for(messages_stub).beta.messages.create(
        model=MODEL, max_tokens=100, messages=HELLO, output_config=output_config
    )

    assert json.loads(message.content[0].text) == {"verdict": "pass", "reason": "ok"}


def test_the_minimum_cacheable_prompt_is_512_tokens_on_sonnet_5_5_and_1024_elsewhere(messages_stub):
    messages_stub.set_fallback(text_reply("ok"))
    client = client_for(messages_stub)
    system = [_cached("You drive a browser. " * 120)]  # about 630 tokens

    sonnet = client.beta.messages.create(model=MODEL, max_tokens=10, system=system, messages=HELLO).usage
    opus = client.beta.messages.create(model="claude-opus-5-5", max_tokens=10, system=system, messages=HELLO).usage

    assert sonnet.cache_creation_input_tokens > 512
    assert opus.cache_creation_input_tokens == 0


def test_images_count_by_their_pixel_size(messages_stub):
    from scripted_api.validation import image_tokens

    wide = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + struct.pack(">II", 1500, 750)).decode()

    assert image_tokens({"type": "image", "source": {"type": "base64", "data": wide}}) == 1500
    assert image_tokens(_image()) == 1


# --- the Models API -------------------------------------------------------------------------------------------------


def test_the_models_api_lists_the_lineup_and_describes_each_model(messages_stub):
    client = client_for(messages_stub)

    ids = [model.id for model in client.models.list()]
    sonnet = client.models.retrieve("claude-sonnet-5-5")
    retiring = client.models.retrieve("claude-sonnet-4-5")

    assert {"claude-fable-5-1", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} <= set(ids)
    assert "claude-3-opus-20240229" in ids
    assert (sonnet.max_input_tokens, sonnet.max_tokens, sonnet.lifecycle) == (1_000_000, 128_000, "active")
    assert sonnet.capabilities.thinking.types.between_tools.supported
    assert not sonnet.capabilities.thinking.types.disabled.supported
    assert (retiring.lifecycle, retiring.retires_at.date().isoformat()) == ("deprecated", "2026-11-30")
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-nonexistent-9")
