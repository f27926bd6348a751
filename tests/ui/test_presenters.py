"""The run page's display transforms (runs/presenters.py), on unsaved runs and events: no request, no database."""

from decimal import Decimal

import pytest

from runs.models import Event, Run
from runs.presenters import (
    cell,
    decimal_places,
    judge_state,
    percent_of,
    replay_steps,
    reply_labels,
    result_lines,
    result_text,
    screenshots,
    signal_rows,
    tables,
    timeline,
    tree,
    turn_budget,
    violations,
)


def events(*specs: tuple[str, dict]) -> list[Event]:
    """Unsaved events numbered from 1, as a run's timeline holds them."""
    return [Event(seq=seq, type=kind, payload=payload) for seq, (kind, payload) in enumerate(specs, start=1)]


def browser_use(tool_use_id: str, turn: int, name: str = "click") -> tuple[str, dict]:
    return ("agent.tool_use", {"id": tool_use_id, "name": name, "toolset": "browser", "turn": turn, "input": {"x": 1}})


def result(tool_use_id: str, content: object, **more: object) -> tuple[str, dict]:
    return ("agent.tool_result", {"tool_use_id": tool_use_id, "content": content, **more})


# --- result text -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("plain", "plain"),
        ([{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}], "a\n[image]\nb"),
        (None, ""),
        ({"k": 1}, '{"k": 1}'),
    ],
)
def test_result_text_reads_strings_and_content_lists(content, text):
    assert result_text(content) == text


def test_result_lines_mark_notices_and_add_separate_ones_once():
    lines = result_lines({"content": "clicked\n[notice] 3 turns left", "notices": ["3 turns left", "page is slow"]})
    assert lines == [
        {"text": "clicked", "notice": False},
        {"text": "[notice] 3 turns left", "notice": True},
        {"text": "[notice] page is slow", "notice": True},
    ]


# --- the timeline ------------------------------------------------------------------------------------------------


def test_reply_labels_count_only_actions_that_ran():
    timeline_events = events(
        ("agent.message", {"turn": 1, "text": "Looking"}),
        browser_use("a", 2),
        result("a", "ok"),
        browser_use("b", 3),
        result("b", "Not executed: the page closed"),
        browser_use("c", 4),
        result("c", "verdict_required: only done is allowed"),
        ("agent.tool_use", {"id": "d", "name": "done", "toolset": None, "turn": 5}),
    )
    assert reply_labels(timeline_events) == {1: "Reply", 2: "Turn 1", 3: "Reply", 4: "Verdict", 5: "Verdict"}


def test_timeline_rows_start_each_reply_and_pretty_print_inputs_and_unknown_events():
    rows = timeline(events(browser_use("a", 1), result("a", "done it"), ("custom.thing", {"n": 1})))
    assert rows[0]["turn_start"] == 1 and rows[0]["turn_label"] == "Turn 1" and rows[0]["turn_action"] == "1"
    assert rows[0]["input_json"] == '{\n  "x": 1\n}'
    assert rows[1]["lines"] == [{"text": "done it", "notice": False}] and "turn_start" not in rows[1]
    assert rows[2]["raw_json"] == '{\n  "n": 1\n}'


def test_violations_are_the_refused_dones_only():
    found = violations(
        events(
            result("a", "output_schema_violation: $.items is required", is_error=True),
            result("b", "output_schema_violation quoted by the page"),
            result("c", "timeout", is_error=True),
        )
    )
    assert found == [{"seq": 1, "text": "output_schema_violation: $.items is required"}]


def test_screenshots_and_replay_steps_follow_the_pictures():
    timeline_events = events(
        ("agent.message", {"turn": 1, "text": "Opening the shop"}),
        browser_use("a", 1, name="navigate"),
        result("a", "loaded", screenshot_url="/s/1.png", url="https://shop.test/", turn=1),
        ("agent.message", {"turn": 2, "text": "All done"}),
        ("agent.final_view", {"screenshot_url": "/s/2.png", "url": "https://shop.test/cart"}),
    )
    assert screenshots(timeline_events) == [
        {"seq": 3, "url": "/s/1.png", "page_url": "https://shop.test/"},
        {"seq": 5, "url": "/s/2.png", "page_url": "https://shop.test/cart"},
    ]
    first, final = replay_steps(timeline_events)
    assert (first["action"], first["message"], first["input"], first["result"]) == (
        "navigate",
        "Opening the shop",
        {"x": 1},
        "loaded",
    )
    assert (final["action"], final["message"], final["input"], final["result"]) == ("Final view", "All done", None, "")


def test_turn_budget_prefers_the_runtime_count():
    timeline_events = events(browser_use("a", 1), result("a", "ok"), browser_use("b", 2), result("b", "ok"))
    assert turn_budget(Run(signals={}), timeline_events) == 2
    assert turn_budget(Run(signals={"turns": 7}), timeline_events) == 7


# --- the result panels -------------------------------------------------------------------------------------------


def test_tree_marks_each_scalar_kind():
    node = tree({"name": "Cedar", "price": 9.5, "tags": [True]})
    assert node["kind"] == "object"
    (_, name), (_, price), (_, tags) = node["items"]
    assert (name["type"], price["type"], tags["items"][0][1]["type"]) == ("string", "number", "other")
    assert name["json"] == '"Cedar"'


def test_tables_show_numbers_with_their_column_decimals():
    found = tables({"items": [{"name": "a", "price": 49.0}, {"name": "b", "price": 14.5, "extra": {"x": 1}}]})
    assert [table["name"] for table in found] == ["items"] and found[0]["columns"] == ["name", "price", "extra"]
    assert [[c["value"] for c in row] for row in found[0]["rows"]] == [["a", "49.0", None], ["b", "14.5", '{"x": 1}']]
    assert tables([1, 2]) == [] and tables({"items": []}) == []


@pytest.mark.parametrize(
    ("values", "places"), [([49.0, 14.5, 9.99], 2), ([1, 2], 0), ([1, "x"], None), ([None], None), ([1e-7], 0)]
)
def test_decimal_places_of_a_column(values, places):
    assert decimal_places(values) == places


def test_cell_values():
    assert cell(3, 2) == "3.00" and cell(None, 2) is None and cell([1], None) == "[1]" and cell("x", None) == "x"


def test_signal_rows_in_words():
    rows = {
        row["key"]: row
        for row in signal_rows({"turns": 3, "verdict_turn": "cap", "verdict_followed": False, "loop_nudges": 2})
    }
    assert rows["turns"]["label"] == "Action turns used" and rows["turns"]["value"] == "3"
    assert rows["verdict_turn"]["value"] == "the action budget" and rows["verdict_followed"]["value"] == "no"
    assert rows["loop_nudges"]["hot"] and not rows["turns"]["hot"]
    calm = signal_rows({"verdict_turn": "none", "verdict_followed": None, "failures_max": None})
    assert [row["value"] for row in calm] == ["none (the agent ended on its own)", "no verdict turn", "not yet"]


@pytest.mark.parametrize(
    ("judge", "status", "judged", "state"),
    [
        (False, Run.Status.SUCCEEDED, True, "judged"),
        (False, Run.Status.SUCCEEDED, False, ""),
        (True, Run.Status.RUNNING, False, "on"),
        (True, Run.Status.FAILED, False, "judging"),
        (True, Run.Status.CANCELLED, False, "skipped"),
    ],
)
def test_judge_state(judge, status, judged, state):
    assert judge_state(Run(judge=judge, status=status), judged) == state


def test_percent_of_a_budget():
    assert percent_of(3, 30) == 10 and percent_of(45, 30) == 100 and percent_of(3, 0) == 0
    assert percent_of(Decimal("0.25"), Decimal("1.00")) == 25 and percent_of(Decimal("1"), None) == 0
