"""The agent loop's phase and its next-step decision, in process: what one reply's answered tool calls lead to.

The loop is real (its model profile comes from the Messages stub's Models API); no browser is opened, since the
decision reads only the reply's results. The end-to-end runs (tests/runtime/test_limits.py, tests/runtime/test_outcomes.py)
cover the same transitions through a worker.
"""

from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.types.beta import BetaToolUseBlock

from runs.evaluation import NoOutcomes
from runs.models import Run
from runtime import notices, prompts
from runtime.calls import CallResult, ReplyCalls, check_done, result_block
from runtime.loop import AgentLoop
from runtime.verdict import VERDICT_CORRECTIONS, Phase
from tests.support.factories import make_run


def no_browser() -> Any:
    raise AssertionError("the decision never opens the browser")


@pytest.fixture
def agent_loop(acme) -> Iterator[AgentLoop]:
    loop = AgentLoop(make_run(acme, max_turns=3), no_browser, evaluator=NoOutcomes())
    yield loop
    loop.record.lane.close()


def browser_call(name: str = "navigate", **given: object) -> BetaToolUseBlock:
    return BetaToolUseBlock(id=f"toolu_{name}", name=name, input=given, type="tool_use", toolset_name="browser")


def done_call(**given: object) -> BetaToolUseBlock:
    return BetaToolUseBlock(id="toolu_done", name=prompts.DONE_TOOL, input=given, type="tool_use")


def action_reply(*, failed: bool = False) -> ReplyCalls:
    use = browser_call(url="https://shop.example/")
    block = result_block(use, "Navigation failed." if failed else "Navigated.", is_error=failed)
    return ReplyCalls(results=[CallResult(use, block)], actions=[(use.name, use.input)])


def done_reply(loop: AgentLoop, **given: object) -> ReplyCalls:
    use = done_call(**given)
    block, accepted = check_done(use, loop.schema)
    return ReplyCalls(results=[CallResult(use, block)], accepted=accepted, done_called=True)


def last_user_texts(loop: AgentLoop) -> list[str]:
    return [block["text"] for block in loop.state.messages[-1]["content"] if block["type"] == "text"]


def test_a_run_starts_working(agent_loop):
    assert agent_loop.state.verdict.phase is Phase.WORKING
    assert agent_loop.state.verdict.pending is False


def test_an_action_turn_within_the_cap_goes_on_working(agent_loop):
    agent_loop.state.verdict.turns = 1

    assert agent_loop.decide_next(action_reply(), Phase.WORKING) is None

    assert agent_loop.state.verdict.phase is Phase.WORKING
    assert agent_loop.signals()["verdict_turn"] == "none"
    assert prompts.VERDICT_NOW not in last_user_texts(agent_loop)


def test_the_last_action_turn_asks_for_the_verdict_after_the_results(agent_loop):
    agent_loop.state.verdict.turns = 3

    assert agent_loop.decide_next(action_reply(), Phase.WORKING) is None

    assert agent_loop.state.verdict.phase is Phase.VERDICT_TURN
    assert agent_loop.state.verdict.pending is True
    signals = agent_loop.signals()
    assert (signals["verdict_turn"], signals["verdict_followed"]) == ("cap", None)
    content = agent_loop.state.messages[-1]["content"]
    assert content[0]["type"] == "tool_result"
    assert content[-1]["text"] == prompts.VERDICT_NOW


def test_a_spent_failure_budget_asks_for_the_verdict(agent_loop):
    agent_loop.state.verdict.turns = 1
    agent_loop.state.verdict.consecutive_errors = notices.FAILURE_LIMIT

    assert agent_loop.decide_next(action_reply(failed=True), Phase.WORKING) is None

    assert agent_loop.state.verdict.phase is Phase.VERDICT_TURN
    assert agent_loop.signals()["verdict_turn"] == "failures"
    assert agent_loop.signals()["failures_max"] is True


def test_a_verdict_turn_without_done_ends_the_run_with_the_verdict_not_followed(agent_loop):
    agent_loop.state.verdict.start("cap")

    ending = agent_loop.decide_next(action_reply(), Phase.VERDICT_TURN)

    assert ending is not None
    assert (ending.status, ending.error_code) == (Run.Status.FAILED, Run.ErrorCode.AGENT_LIMIT)
    assert agent_loop.signals()["verdict_followed"] is False


def test_a_done_on_the_verdict_turn_ends_the_run_with_the_verdict_followed(agent_loop):
    agent_loop.state.verdict.start("cap")

    ending = agent_loop.decide_next(done_reply(agent_loop, success=True, output="Three products."), Phase.VERDICT_TURN)

    assert ending is not None
    assert (ending.status, ending.success, ending.output) == (Run.Status.SUCCEEDED, True, "Three products.")
    assert agent_loop.signals()["verdict_followed"] is True


def test_a_refused_done_on_the_verdict_turn_may_be_corrected_a_bounded_number_of_times(agent_loop):
    agent_loop.state.verdict.start("cap")

    for _ in range(VERDICT_CORRECTIONS):
        assert agent_loop.decide_next(done_reply(agent_loop, success="yes"), Phase.VERDICT_TURN) is None
        assert agent_loop.state.verdict.phase is Phase.VERDICT_TURN
        assert agent_loop.state.verdict.pending is True
    ending = agent_loop.decide_next(done_reply(agent_loop, success="yes"), Phase.VERDICT_TURN)

    assert ending is not None
    assert ending.error_code == Run.ErrorCode.AGENT_LIMIT
    assert agent_loop.signals()["verdict_followed"] is False


def test_prose_asks_once_for_done_and_prose_on_that_verdict_turn_ends_the_run(agent_loop):
    assert agent_loop.follow(agent_loop.state.verdict.prose()) is None
    assert agent_loop.state.verdict.phase is Phase.VERDICT_TURN
    assert agent_loop.signals()["verdict_turn"] == "prose"
    assert last_user_texts(agent_loop) == [prompts.ASK_FOR_DONE]

    ending = agent_loop.follow(agent_loop.state.verdict.prose())

    assert ending is not None
    assert ending.error_code == Run.ErrorCode.AGENT_INCOMPLETE
    assert agent_loop.signals()["verdict_followed"] is False


def test_an_empty_reply_is_nudged_once_then_counts_as_prose(agent_loop):
    assert agent_loop.follow(agent_loop.state.verdict.empty_reply()) is None
    assert agent_loop.state.verdict.phase is Phase.WORKING
    assert last_user_texts(agent_loop) == [prompts.EMPTY_REPLY]

    assert agent_loop.follow(agent_loop.state.verdict.empty_reply()) is None

    assert agent_loop.state.verdict.phase is Phase.VERDICT_TURN
    assert agent_loop.signals()["verdict_turn"] == "prose"


class Evaluated:
    def __init__(self, result: str, iteration: int) -> None:
        self.result, self.iteration, self.explanation = result, iteration, ""


class Grader:
    """An outcome evaluator that gives one result, injected as the grading app injects its own."""

    def __init__(self, result: str) -> None:
        self.result = result

    def has_outcome(self, run: Run) -> bool:
        return True

    def evaluate(self, run: Run, iteration: int, final_view: object, *, done: object) -> Evaluated:
        return Evaluated(self.result, iteration)

    def revision_message(self, evaluation: Evaluated) -> str:
        return "Revise: the outcome is not met yet."

    def acknowledgment_message(self, evaluation: Evaluated) -> str:
        return "The outcome's iterations are spent: acknowledge with done."


@pytest.fixture
def graded_loop(request, acme, transactional_db) -> Iterator[AgentLoop]:
    """A loop whose accepted done is graded (the grade is written on the lane, so the data is committed)."""
    loop = AgentLoop(make_run(acme, max_turns=3), no_browser, evaluator=Grader(request.param))
    yield loop
    loop.record.lane.close()


@pytest.mark.parametrize("graded_loop", ["needs_revision"], indirect=True)
def test_a_done_sent_back_for_revision_starts_a_fresh_working_budget(graded_loop):
    graded_loop.state.verdict.turns = 3
    graded_loop.state.verdict.start("cap")

    assert graded_loop.decide_next(done_reply(graded_loop, success=True, output="Done."), Phase.VERDICT_TURN) is None

    assert graded_loop.state.verdict.phase is Phase.WORKING
    assert graded_loop.state.verdict.pending is False
    assert graded_loop.state.verdict.budget_start == 3
    assert graded_loop.signals()["verdict_followed"] is True
    assert last_user_texts(graded_loop)[-1] == "Revise: the outcome is not met yet."


@pytest.mark.parametrize("graded_loop", ["max_iterations_reached"], indirect=True)
def test_spent_iterations_ask_for_an_acknowledgment_where_only_a_done_counts(graded_loop):
    assert graded_loop.decide_next(done_reply(graded_loop, success=True, output="First."), Phase.WORKING) is None
    assert graded_loop.state.verdict.phase is Phase.ACKNOWLEDGING
    assert last_user_texts(graded_loop)[-1] == "The outcome's iterations are spent: acknowledge with done."

    ending = graded_loop.acknowledged([browser_call(), done_call(success=False, output="Second.")])

    assert (ending.status, ending.success, ending.output) == (Run.Status.FAILED, False, "Second.")


@pytest.mark.parametrize("graded_loop", ["max_iterations_reached"], indirect=True)
def test_an_empty_acknowledgment_keeps_the_last_done(graded_loop):
    graded_loop.decide_next(done_reply(graded_loop, success=True, output="First."), Phase.WORKING)

    ending = graded_loop.follow(graded_loop.state.verdict.empty_reply())

    assert ending is not None
    assert (ending.status, ending.output) == (Run.Status.SUCCEEDED, "First.")


ITEMS = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    "required": ["items"],
}


def test_under_an_output_schema_a_failure_may_come_without_data(agent_loop):
    agent_loop.schema = ITEMS

    block, accepted = check_done(done_call(success=False, output="No products are listed."), agent_loop.schema)

    assert accepted == {"success": False, "output": "No products are listed.", "data": None}
    assert block.get("is_error") is None


def test_under_an_output_schema_data_given_with_a_failure_is_checked(agent_loop):
    agent_loop.schema = ITEMS

    block, accepted = check_done(done_call(success=False, output="Partial.", data={"items": [1]}), agent_loop.schema)

    assert accepted is None
    assert block["content"][0]["text"] == "output_schema_violation:\nat $.items[0]: 1 is not of type 'string'"


def test_under_an_output_schema_a_success_without_data_is_refused(agent_loop):
    agent_loop.schema = ITEMS

    block, accepted = check_done(done_call(success=True, output="Done."), agent_loop.schema)

    assert accepted is None
    assert block["content"][0]["text"] == (
        "output_schema_violation:\nat $: data is required by this run's output_schema when success is true"
    )
