"""Context management: the server-side parameter chosen from the model's profile, and the client-side guard that keeps
what is sent under the window, 100 images and 32 MB in large, cache-friendly steps while the history stays whole."""

import base64
import copy
import json
import struct
from dataclasses import dataclass

from runtime.context import (
    CLEAR_TOOL_USES,
    COMPACT,
    MAX_IMAGES,
    MAX_REQUEST_BYTES,
    ContextState,
    betas_for,
    context_management,
    prepare,
    size_of,
)


@dataclass(frozen=True)
class FakeProfile:
    max_input_tokens: int
    image_input: bool = True
    context_management: tuple[str, ...] = (COMPACT, CLEAR_TOOL_USES)


def png(width: int, height: int, payload_bytes: int = 2_000) -> str:
    """A base64 PNG whose header says width x height, padded to about `payload_bytes` (the guard reads only the
    header; the stub and the API count the bytes)."""
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height)
    return base64.b64encode(header + b"\0" * payload_bytes).decode()


PAGE = ("Product listing row with a name, a price and a long description of the item. " * 600)[:40_000]


def exchange(turn: int, *, image_bytes: int = 2_000, page: str = PAGE) -> list[dict]:
    """One agent turn: thinking, two browser calls; then their results: the page's text and a screenshot."""
    text_id, shot_id = f"toolu_text_{turn}", f"toolu_shot_{turn}"
    assistant = {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": f"Turn {turn}: read the page, then look at it.",
                "signature": f"sig{turn}",
            },
            {"type": "tool_use", "id": text_id, "name": "get_page_text", "input": {}, "toolset_name": "browser"},
            {"type": "tool_use", "id": shot_id, "name": "screenshot", "input": {}, "toolset_name": "browser"},
        ],
    }
    user = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": text_id,
                "toolset_name": "browser",
                "content": [{"type": "text", "text": page}],
            },
            {
                "type": "tool_result",
                "tool_use_id": shot_id,
                "toolset_name": "browser",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": png(1280, 800, image_bytes)},
                    }
                ],
            },
        ],
    }
    return [assistant, user]


TASK = {"role": "user", "content": [{"type": "text", "text": "Find the cheapest mug on the shop's pages."}]}


def play(profile, turns: int, **exchange_options):
    """Run the guard as the loop does, one request per turn, and return every request's messages and each step."""
    history = [copy.deepcopy(TASK)]
    state = ContextState()
    requests, steps, labels = [], [], {}
    for turn in range(1, turns + 1):
        history.extend(exchange(turn, **exchange_options))
        labels[f"toolu_shot_{turn}"] = f"of turn {turn}"
        kept = copy.deepcopy(history) if turn % 25 == 0 else None
        prepared = prepare(history, profile, state, labels=labels)
        assert kept is None or history == kept, "the stored history is never changed"
        state = prepared.state
        requests.append(prepared.messages)
        steps.append(prepared)
    return history, requests, steps


def images_in(value) -> int:
    if isinstance(value, dict):
        return (value.get("type") == "image") + sum(images_in(v) for k, v in value.items() if k != "source")
    if isinstance(value, list):
        return sum(images_in(v) for v in value)
    return 0


def assert_pairs_and_thinking_intact(sent: list[dict], history: list[dict]) -> None:
    assistants = [m for m in history if m["role"] == "assistant"]
    for index, message in enumerate(sent):
        if message["role"] != "assistant":
            continue
        assert message in assistants, "an assistant turn (thinking blocks included) goes back exactly as received"
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        answered = [b["tool_use_id"] for b in sent[index + 1]["content"] if b.get("type") == "tool_result"]
        assert answered == uses, "every tool_use keeps its tool_result, in order"


def test_compaction_is_asked_for_where_the_profile_offers_it():
    param = context_management(FakeProfile(1_000_000))
    assert param == {"edits": [{"type": COMPACT, "trigger": {"type": "input_tokens", "value": 150_000}}]}
    assert betas_for(param) == ["compact-2026-01-12"]


def test_tool_result_clearing_in_large_steps_where_compaction_is_not_offered():
    param = context_management(FakeProfile(200_000, context_management=(CLEAR_TOOL_USES,)))
    (edit,) = param["edits"]
    assert edit["type"] == CLEAR_TOOL_USES
    assert edit["trigger"] == {"type": "input_tokens", "value": 100_000}
    assert edit["clear_at_least"]["value"] == 50_000, "half the prompt at a time, so the cache is rebuilt rarely"
    assert "done" in edit["exclude_tools"] and "extract" in edit["exclude_tools"]
    assert betas_for(param) == ["context-management-2025-06-27"]


def test_no_parameter_for_a_model_without_context_management():
    assert context_management(FakeProfile(200_000, context_management=())) is None
    assert context_management(None) is None


def test_150_turns_of_40k_page_texts_and_screenshots_stay_under_a_200k_window():
    profile = FakeProfile(200_000)
    history, requests, _steps = play(profile, 150)
    for sent in requests:
        size = size_of(sent)
        assert size.tokens <= 200_000 * 0.85
        assert images_in(sent) <= MAX_IMAGES
        assert len(json.dumps(sent)) < MAX_REQUEST_BYTES
        assert_pairs_and_thinking_intact(sent, history)
    full = size_of(history)
    assert full.tokens > 1_000_000, "without the guard the last request would be five windows long"
    # The latest results always go out whole: the agent is reading them.
    assert requests[-1][-1] == history[-1] and requests[-1][-3] == history[-3]


def test_the_guard_moves_in_large_steps_so_the_sent_prefix_stays_cached():
    profile = FakeProfile(200_000)
    _, requests, steps = play(profile, 150)
    moves = [number for number, step in enumerate(steps) if step.dropped]
    assert 5 <= len(moves) <= 25, f"the guard acted on {len(moves)} of 150 requests"
    stable = 0
    for number in range(1, len(requests)):
        previous, current = requests[number - 1], requests[number]
        if number not in moves:
            # Between steps, each request starts with the whole previous request, byte for byte.
            assert json.dumps(current[: len(previous)]) == json.dumps(previous)
            stable += 1
    assert stable >= 120


def test_a_step_reports_what_left_and_the_tokens_it_saved():
    profile = FakeProfile(200_000)
    _, _, steps = play(profile, 30)
    step = next(step for step in steps if step.dropped)
    event = step.dropped.as_event(turn=12, tokens_sent=step.size.tokens)
    assert event["reason"] == "tokens"
    assert event["page_texts"] >= 5 and event["screenshots"] >= 5
    assert event["tokens_saved"] > 50_000
    assert event["turn"] == 12 and event["tokens_sent"] == step.size.tokens


def test_an_old_screenshot_becomes_a_one_line_placeholder_naming_it():
    profile = FakeProfile(200_000)
    _, requests, _ = play(profile, 40)
    first_results = requests[-1][2]["content"]
    shot = first_results[1]["content"]
    assert shot == [{"type": "text", "text": "[screenshot of turn 1 left the conversation to save context]"}]
    text = first_results[0]["content"][0]["text"]
    assert text.startswith(PAGE[:300]) and "more characters of this page text" in text and len(text) < 600


def test_big_screenshots_are_dropped_before_32_mb_even_on_a_1m_window():
    # 1.2 MB screenshots on a 1M-token model: bytes, not tokens, bring the step.
    profile = FakeProfile(1_000_000)
    history, requests, steps = play(profile, 60, image_bytes=1_200_000, page="short page")
    # Serializing 30 MB sixty times is slow: every request's measure, and every fifth one's real body.
    assert all(size_of(sent).bytes < MAX_REQUEST_BYTES for sent in requests)
    assert all(len(json.dumps(sent)) < MAX_REQUEST_BYTES for sent in requests[::5])
    assert any(step.dropped.reason == "bytes" for step in steps)
    assert size_of(history).bytes > MAX_REQUEST_BYTES


def test_more_than_100_small_screenshots_never_go_out_in_one_request():
    profile = FakeProfile(1_000_000)
    _, requests, steps = play(profile, 150, image_bytes=100, page="short page")
    assert max(images_in(sent) for sent in requests) <= 80
    assert any(step.dropped.reason == "images" for step in steps)


def test_whole_exchanges_leave_when_trimming_is_not_enough():
    # Long reasoning the guard may not touch: only dropping the oldest exchanges fits this 50K window.
    profile = FakeProfile(50_000)
    history = [copy.deepcopy(TASK)]
    state = ContextState()
    for turn in range(1, 40):
        assistant, user = exchange(turn, page="short page")
        assistant["content"].insert(1, {"type": "text", "text": "Weighing the options at length. " * 200})
        history += [assistant, user]
        prepared = prepare(history, profile, state)
        state = prepared.state
        assert prepared.size.tokens <= 50_000 * 0.85
        assert_pairs_and_thinking_intact(prepared.messages, history)
    assert state.dropped_exchanges > 0
    note = prepared.messages[0]["content"][-1]["text"]
    assert note.startswith(f"[{state.dropped_exchanges} earlier exchanges of this run left the conversation")
    assert prepared.messages[0]["content"][0] == TASK["content"][0], "the task itself always goes out"
