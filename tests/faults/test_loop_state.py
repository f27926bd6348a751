"""What a handover carries (runtime.checkpoint.LoopState) comes back whole: a state with every field set apart from a
fresh run's goes through a checkpoint and is read back equal, as JSON and through the database. A field added to the
state (or to the verdict phase, the notice tracker, the browser's progress) and not carried fails here: the fully
set state below must set it too (the first test), and then the round trips must bring it back."""

import dataclasses
import json
from typing import Any

import pytest

from runs.models import RunCheckpoint
from runs.spending import LastRequest
from runtime import checkpoint
from runtime.checkpoint import LoopState
from runtime.context import ContextState
from runtime.notices import NoticeTracker
from runtime.run_browser import BrowserProgress
from runtime.verdict import Phase, Verdict
from tests.support.factories import make_run


def fresh() -> LoopState:
    return LoopState.start(max_turns=3, max_tokens=16_000)


def fully_set() -> LoopState:
    """Every field, and every field of the objects it holds, unlike a fresh run's."""
    verdict = Verdict(7)
    verdict.phase = Phase.VERDICT_TURN
    verdict.turns = 5
    verdict.budget_start = 2
    verdict.consecutive_errors = 3
    verdict.failures_max = True
    verdict.reason = "failures"
    verdict.followed = False
    verdict.corrections = 1
    verdict.nudged_empty = True
    verdict.truncations = 2
    verdict.iteration = 1
    verdict.last_done = {"success": True, "output": "Three products.", "data": {"items": [1, 2]}}
    verdict.refused_dones = 1
    verdict.last_refusal = "data.items: expected an array"
    return LoopState(
        max_tokens=32_000,
        verdict=verdict,
        tracker=NoticeTracker(
            max_turns=7,
            budget_notices=1,
            loop_nudges=2,
            stagnation_nudges=3,
            previous_action=("left_click", {"target": {"type": "ref", "ref": "e12"}}),
            fingerprint="5f0c2d",
            unchanged_turns=2,
        ),
        messages=[
            {"role": "user", "content": [{"type": "text", "text": "List the products."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "", "signature": "c2lnbmVk"},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_page", "input": {}, "toolset_name": "browser"},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "A page"}]},
        ],
        replies=4,
        pauses=1,
        elapsed_seconds=12.5,
        context=ContextState(horizon=3, dropped_exchanges=1),
        result_labels={"toolu_1": "of read_page call toolu_1, turn 1"},
        last_request=LastRequest(prompt_tokens=1_200, output_tokens=80, estimated_tokens=1_150),
        sent_tokens=1_234,
        cache_kept=True,
        answers={"ANSWER_1": "hunter2"},
        browser=BrowserProgress(url="https://shop.example/basket", recoveries=1, started_clean=True),
    )


def comparable(value: Any) -> Any:
    """A value as plain data, to compare: a dataclass by its compared fields, the verdict phase by its attributes."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: comparable(getattr(value, field.name)) for field in dataclasses.fields(value) if field.compare
        }
    if isinstance(value, Verdict):
        return {name: comparable(item) for name, item in vars(value).items()}
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


def same_as_fresh(state: LoopState) -> list[str]:
    """The fields of `state`, and the fields of the objects it holds, that are as a fresh run's."""
    full, empty = comparable(state), comparable(fresh())
    same = []
    for name, value in full.items():
        held = getattr(state, name)
        if isinstance(value, dict) and isinstance(empty[name], dict) and not isinstance(held, dict):
            same += [f"{name}.{inner}" for inner, item in value.items() if empty[name].get(inner) == item]
        elif value == empty[name]:
            same.append(name)
    return same


def test_the_fully_set_state_sets_every_field_apart_from_a_fresh_one():
    assert same_as_fresh(fully_set()) == []


def test_every_field_of_the_state_is_carried():
    """Those not in the checkpoint's state JSON have columns of their own: the conversation and the URL."""
    stored = checkpoint.encode(fully_set())

    assert {field.name for field in dataclasses.fields(LoopState)} - {"messages", "browser"} <= {
        *stored,
        "context",
        "verdict",
    }
    assert "browser_recoveries" in stored and "started_clean" in stored


def test_a_state_comes_back_equal_from_its_json():
    state = fully_set()

    stored = json.loads(json.dumps(checkpoint.encode(state)))
    back = checkpoint.decode(stored, json.loads(json.dumps(state.messages)), state.browser.url)

    assert comparable(back) == comparable(state)
    assert isinstance(back.tracker.previous_action, tuple)


def test_the_secret_answers_are_sealed_in_the_checkpoint():
    stored = json.dumps(checkpoint.encode(fully_set()))

    assert "hunter2" not in stored


@pytest.mark.django_db
def test_a_state_comes_back_equal_through_the_checkpoints_of_a_run(acme):
    run = make_run(acme)
    state = fully_set()
    messages = state.messages
    # two turns: the second checkpoint holds only the messages since the first one, and its last
    state.messages = messages[:1]
    checkpoint.write(run, 0, checkpoint.take(state, 0), {"cookies": [], "origins": []})
    state.messages = messages
    checkpoint.write(run, 0, checkpoint.take(state, 1), None)

    resumed = checkpoint.resumption(run)

    assert resumed is not None
    assert comparable(resumed.state) == comparable(state)
    assert resumed.turn == state.replies
    assert resumed.browser_state == {"cookies": [], "origins": []}
    assert RunCheckpoint.objects.filter(run=run).count() == 2
