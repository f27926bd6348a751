"""The Messages stub answers the real anthropic SDK the way the API does: replies, tool use, errors, retries, caching."""

import threading

import anthropic
import pytest
from anthropic.types import TextBlock, ToolUseBlock
from anthropic.types.beta import BetaToolUseBlock

from judge.prompts import GRADER_SYSTEM, JUDGE_SYSTEM
from runs.scripted.wire import (
    WireServer,
    dropped_connection,
    error_reply,
    multi_tool_use_reply,
    text_reply,
    tool_use_block,
    tool_use_reply,
)
from tests import messages_stub as stub_fixtures
from tests.messages_stub import GRADER_TOOL, JUDGE_TOOL, MessagesStub

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
