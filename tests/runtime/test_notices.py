"""The runtime's [notice] lines: each kind decided at the right turn, and shown to the agent at the end of tool results."""

import pytest

from runs.models import Run
from runtime import notices
from runtime.calls import add_notices
from runtime.notices import NoticeTracker
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done, last_tool_result_text

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker


def kinds(lines: list[str]) -> list[str]:
    names = []
    for line in lines:
        assert line.startswith("[notice] ")
        if "action turn" in line:
            names.append("budget")
        elif "repeated" in line:
            names.append("loop")
        elif "has not changed" in line:
            names.append("stagnation")
        elif "failed in a row" in line:
            names.append("failures")
    return names


def test_remaining_budget_is_announced_from_75_percent_of_max_turns():
    assert [notices.budget_notice(used, 8) for used in range(1, 6)] == [None] * 5
    assert notices.budget_notice(6, 8) == "[notice] 2 action turns remain (6 of 8 used)."
    assert "next turn is your last action turn" in notices.budget_notice(7, 8)
    assert "That was your last action turn" in notices.budget_notice(8, 8)


def test_remaining_budget_of_a_large_budget_counts_down_from_three_quarters():
    assert notices.budget_notice(74, 100) is None
    assert notices.budget_notice(75, 100) == "[notice] 25 action turns remain (75 of 100 used)."


def test_the_failure_budget_says_how_many_failures_remain():
    assert notices.failure_notice(1) is None
    assert "2 tool calls failed in a row; 3 more failures" in notices.failure_notice(2)
    assert "4 tool calls failed in a row; 1 more failure and" in notices.failure_notice(4)
    assert "the failure budget is spent" in notices.failure_notice(5)


def test_the_same_action_with_the_same_input_is_a_repeat_but_another_input_is_not():
    tracker = NoticeTracker(max_turns=30)
    assert tracker.for_turn(actions=[("left_click", {"target": "e4"})], turns_used=1, consecutive_errors=0) == []
    assert tracker.for_turn(actions=[("left_click", {"target": "e5"})], turns_used=2, consecutive_errors=0) == []
    lines = tracker.for_turn(actions=[("left_click", {"target": "e5"})], turns_used=3, consecutive_errors=0)
    assert kinds(lines) == ["loop"]
    assert "left_click" in lines[0]
    assert tracker.loop_nudges == 1


def test_a_page_that_stays_the_same_over_three_acting_turns_stopped_changing():
    tracker = NoticeTracker(max_turns=30)
    turn = iter(range(1, 100))

    def acting(fingerprint: str, acted: bool | None = None) -> list[str]:
        return tracker.for_turn(
            actions=[("left_click", {"n": next(turn)})],
            turns_used=1,
            consecutive_errors=0,
            fingerprint=fingerprint,
            acted=acted,
        )

    assert acting("A") == []
    assert acting("A") == []
    assert kinds(acting("A")) == ["stagnation"]
    assert acting("B") == []  # the page changed: the count starts again
    assert acting("B", acted=False) == []  # a failed action neither proves nor disproves a stall
    assert acting("B") == []
    assert kinds(acting("B")) == ["stagnation"]
    assert tracker.stagnation_nudges == 2


def test_reading_a_page_that_stands_still_is_not_a_stall():
    tracker = NoticeTracker(max_turns=30)
    for depth in range(5):
        lines = tracker.for_turn(
            actions=[("read_page", {"depth": depth})], turns_used=1, consecutive_errors=0, fingerprint="A"
        )
        assert lines == []
    assert tracker.stagnation_nudges == 0


def test_a_turn_that_only_called_done_gets_no_budget_notice_but_the_failure_budget():
    tracker = NoticeTracker(max_turns=4)
    assert kinds(tracker.for_turn(actions=[], turns_used=4, consecutive_errors=3)) == ["failures"]
    assert tracker.budget_notices == 0


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("runtime_worker", "transactional_db")
def test_each_notice_reaches_the_agent_at_the_end_of_the_right_turns_tool_result(acme, site, messages_stub):
    messages_stub.agent(
        browser("wait", duration=0.1),  # 1
        browser("wait", duration=0.2),  # 2
        browser("wait", duration=0.2),  # 3: the same action again, and the page has not changed over 3 turns
        browser("navigate", url=f"{site}/index.html"),  # 4
        browser("no_such_member", attempt=1),  # 5: a failure
        browser("no_such_member", attempt=2),  # 6: a second failure in a row; 75% of the budget used
        browser("read_page"),  # 7: the next turn is the last
        browser("get_page_text"),  # 8: that was the last
        done(True, "Looked around."),  # the verdict turn
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html", max_turns=8)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    results = [event.payload for event in events(run, "agent.tool_result")]
    assert [kinds(result["notices"]) for result in results] == [
        [],
        [],
        ["loop", "stagnation"],
        [],
        [],
        ["budget", "failures"],
        ["budget"],
        ["budget"],
        [],
    ]
    for result in results:
        for line in result["notices"]:
            assert result["content"].endswith(line) or line in result["content"].splitlines()
    requests = messages_stub.requests
    for turn, result in enumerate(results[:8], start=1):
        sent = last_tool_result_text(requests[turn])
        assert all(line in sent.splitlines() for line in result["notices"])
    assert "2 action turns remain (6 of 8 used)" in last_tool_result_text(requests[6])
    # Notices go before the SDK's browser_state block, where the SDK puts its own text.
    budget_turn = [block for block in requests[7]["messages"][-1]["content"] if block["type"] == "tool_result"][-1]
    kinds_in_order = [block["type"] for block in budget_turn["content"]]
    assert kinds_in_order[-1] == "browser_state"
    assert budget_turn["content"][-2]["text"].startswith("[notice]")
    assert all("tool_choice" not in request for request in requests)
    assert "This is your verdict turn" in requests[8]["messages"][-1]["content"][-1]["text"]
    assert run.signals == {
        "turns": 8,
        "max_turns": 8,
        "budget_notices": 3,
        "loop_nudges": 1,
        "stagnation_nudges": 1,
        "failures_max": False,
        "verdict_turn": "cap",
        "verdict_followed": True,
        "worker_losses": 0,
    }


def test_notices_go_before_the_browser_state_block_of_a_tool_result():
    block = {
        "type": "tool_result",
        "content": [
            {"type": "text", "text": "Clicked."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "browser_state", "tabs": [{"url": "http://shop.test/", "active": True}]},
        ],
    }

    add_notices(block, ["[notice] 1 action turn remains."])

    assert [inner["type"] for inner in block["content"]] == ["text", "image", "text", "browser_state"]
    assert block["content"][2]["text"] == "[notice] 1 action turn remains."
