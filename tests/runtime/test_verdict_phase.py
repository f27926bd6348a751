"""The verdict phase as a pure object: every transition of the action budget, the failure budget and the verdict
turn, driven with plain values (no database, no thread, no model profile, no browser)."""

import pytest

from runs.models import Run
from runtime import notices, prompts
from runtime.verdict import MAX_TRUNCATIONS, VERDICT_CORRECTIONS, Ending, Next, Phase, Verdict

DONE = {"success": True, "output": "Three products.", "data": None}
FAILED_DONE = {"success": False, "output": "No products.", "data": None}


def after(verdict: Verdict, *, acted=False, accepted=None, done_called=False, replied_in=None) -> Next:
    return verdict.after_results(
        acted=acted, accepted=accepted, done_called=done_called, replied_in=replied_in or verdict.phase
    )


def acting_turn(verdict: Verdict, *, failed: bool = False) -> Next:
    replied_in = verdict.phase
    verdict.call_answered(is_error=failed)
    verdict.action_turn()
    return after(verdict, acted=True, replied_in=replied_in)


def refused_done(verdict: Verdict, detail: str = "output_schema_violation:\nat $: data is required") -> Next:
    replied_in = verdict.phase
    verdict.call_answered(is_error=True)
    verdict.done_refused(detail)
    return after(verdict, done_called=True, replied_in=replied_in)


def signals(verdict: Verdict) -> dict:
    return verdict.signals(budget_notices=0, loop_nudges=0, stagnation_nudges=0)


def test_a_run_starts_working_with_no_verdict_turn():
    verdict = Verdict(max_turns=3)

    assert verdict.phase is Phase.WORKING
    assert verdict.pending is False
    assert signals(verdict) == {
        "turns": 0,
        "max_turns": 3,
        "budget_notices": 0,
        "loop_nudges": 0,
        "stagnation_nudges": 0,
        "failures_max": False,
        "verdict_turn": "none",
        "verdict_followed": None,
    }


def test_action_turns_within_the_cap_go_on_working():
    verdict = Verdict(max_turns=3)

    assert acting_turn(verdict) == Next()
    assert acting_turn(verdict) == Next()

    assert verdict.phase is Phase.WORKING
    assert verdict.turns == 2


def test_the_last_action_turn_asks_for_the_verdict_after_the_results():
    verdict = Verdict(max_turns=2)
    acting_turn(verdict)

    step = acting_turn(verdict)

    assert step == Next(message=prompts.VERDICT_NOW)
    assert verdict.phase is Phase.VERDICT_TURN
    assert verdict.pending is True
    assert (signals(verdict)["verdict_turn"], signals(verdict)["verdict_followed"]) == ("cap", None)


def test_a_turn_without_an_action_does_not_spend_the_cap():
    verdict = Verdict(max_turns=1)
    verdict.action_turn()

    assert after(verdict, acted=False) == Next()
    assert verdict.phase is Phase.WORKING


def test_a_spent_failure_budget_asks_for_the_verdict_and_marks_failures_max():
    verdict = Verdict(max_turns=30)
    for _ in range(notices.FAILURE_LIMIT - 1):
        assert acting_turn(verdict, failed=True) == Next()

    step = acting_turn(verdict, failed=True)

    assert step.message == prompts.VERDICT_NOW
    assert verdict.reason == "failures"
    assert verdict.failures_max is True


def test_a_success_refills_the_failure_budget():
    verdict = Verdict(max_turns=30)
    for _ in range(notices.FAILURE_LIMIT - 1):
        acting_turn(verdict, failed=True)
    acting_turn(verdict)

    assert verdict.consecutive_errors == 0
    assert acting_turn(verdict, failed=True) == Next()
    assert verdict.phase is Phase.WORKING


@pytest.mark.parametrize(
    ("reason", "error_code", "says"),
    [
        ("cap", Run.ErrorCode.AGENT_LIMIT, "The agent used its 3 action turns and did not call done on its verdict"),
        ("failures", Run.ErrorCode.AGENT_LIMIT, "5 tool calls failed in a row and the agent did not call done"),
        ("budget", Run.ErrorCode.COST_LIMIT, "The run reached its cost cap and the agent did not call done"),
        ("prose", Run.ErrorCode.AGENT_INCOMPLETE, "The agent replied in prose without calling done, was asked once"),
    ],
)
def test_a_verdict_turn_without_done_ends_the_run_saying_what_brought_it(reason, error_code, says):
    verdict = Verdict(max_turns=3)
    verdict.start(reason)

    step = acting_turn(verdict)

    assert step.ending is not None
    assert (step.ending.status, step.ending.error_code) == (Run.Status.FAILED, error_code)
    assert step.ending.message.startswith(says)
    assert verdict.followed is False


def test_a_done_on_the_verdict_turn_is_followed_and_graded():
    verdict = Verdict(max_turns=3)
    verdict.start("cap")

    step = after(verdict, accepted=DONE, done_called=True)

    assert step == Next(grade=DONE)
    assert verdict.followed is True
    assert verdict.graded("satisfied") == Ending.verdict(DONE)


def test_a_done_while_working_leaves_the_verdict_turn_signals_alone():
    verdict = Verdict(max_turns=3)

    assert after(verdict, accepted=DONE, done_called=True) == Next(grade=DONE)

    assert (verdict.reason, verdict.followed) == ("none", None)


def test_a_refused_done_on_the_verdict_turn_may_be_corrected_a_bounded_number_of_times():
    verdict = Verdict(max_turns=3)
    verdict.start("cap")

    for _ in range(VERDICT_CORRECTIONS):
        assert refused_done(verdict) == Next()
        assert verdict.pending is True
    step = refused_done(verdict, "output_schema_violation:\nat $.items: 'x' is not of type 'array'")

    assert step.ending is not None
    assert step.ending.error_code == Run.ErrorCode.AGENT_LIMIT
    assert step.ending.message == (
        "The agent used its 3 action turns, and every done the agent called was refused (3 calls); the last: "
        "output_schema_violation: at $.items: 'x' is not of type 'array'"
    )
    assert verdict.followed is False


def test_refused_dones_while_working_spend_the_failure_budget_and_the_ending_says_they_were_refused():
    verdict = Verdict(max_turns=30)
    for _ in range(notices.FAILURE_LIMIT):
        refused_done(verdict)
    assert verdict.reason == "failures"
    for _ in range(VERDICT_CORRECTIONS):
        refused_done(verdict)

    step = refused_done(verdict)

    assert step.ending is not None
    assert "did not call done" not in step.ending.message
    assert step.ending.message.startswith(
        f"5 tool calls failed in a row, and every done the agent called was refused "
        f"({notices.FAILURE_LIMIT + VERDICT_CORRECTIONS + 1} calls)"
    )


def test_an_accepted_done_forgets_the_refused_ones_before_it():
    verdict = Verdict(max_turns=3)
    refused_done(verdict)
    after(verdict, accepted=DONE, done_called=True)
    verdict.graded("needs_revision")
    verdict.start("cap")

    step = acting_turn(verdict)

    assert step.ending is not None
    assert step.ending.message.endswith("did not call done on its verdict turn.")


def test_prose_asks_once_for_done_and_prose_on_that_verdict_turn_ends_the_run():
    verdict = Verdict(max_turns=3)

    assert verdict.prose() == Next(message=prompts.ASK_FOR_DONE)
    assert (verdict.phase, verdict.reason) == (Phase.VERDICT_TURN, "prose")

    step = verdict.prose()

    assert step.ending is not None
    assert step.ending.error_code == Run.ErrorCode.AGENT_INCOMPLETE
    assert verdict.followed is False


def test_an_empty_reply_is_nudged_once_then_counts_as_prose():
    verdict = Verdict(max_turns=3)

    assert verdict.empty_reply() == Next(message=prompts.EMPTY_REPLY)
    assert verdict.phase is Phase.WORKING

    assert verdict.empty_reply() == Next(message=prompts.ASK_FOR_DONE)
    assert verdict.reason == "prose"


def test_an_empty_reply_on_the_verdict_turn_ends_the_run():
    verdict = Verdict(max_turns=3)
    verdict.start("cap")

    step = verdict.empty_reply()

    assert step.ending is not None and step.ending.error_code == Run.ErrorCode.AGENT_LIMIT


def test_the_cost_cap_near_makes_the_next_request_the_verdict_turn_while_working_only():
    verdict = Verdict(max_turns=3)

    assert verdict.cost_cap_near() is True
    assert (verdict.phase, verdict.reason) == (Phase.VERDICT_TURN, "budget")
    assert verdict.cost_cap_near() is False


def test_an_extract_refused_at_the_cost_cap_starts_the_verdict_turn_answered_by_the_next_reply():
    verdict = Verdict(max_turns=3)
    verdict.call_answered(is_error=True)
    verdict.extract_refused_at_cost_cap()
    verdict.action_turn()

    step = after(verdict, acted=True, replied_in=Phase.WORKING)

    assert step == Next(message=prompts.VERDICT_NOW)
    assert verdict.pending is True  # decided by the next reply, not by this one


def test_replies_cut_off_at_max_tokens_give_up_after_the_limit_in_a_row():
    verdict = Verdict(max_turns=3)
    for _ in range(MAX_TRUNCATIONS):
        assert verdict.truncated(4096) == Next()

    step = verdict.truncated(8192)

    assert step.ending is not None
    assert step.ending.error_code == Run.ErrorCode.MODEL_ERROR
    assert step.ending.message == (
        f"The model's replies were cut off at max_tokens (8192) {MAX_TRUNCATIONS + 1} times in a row."
    )


def test_a_complete_reply_ends_a_run_of_truncations():
    verdict = Verdict(max_turns=3)
    for _ in range(MAX_TRUNCATIONS):
        verdict.truncated(4096)
    verdict.complete_reply()

    assert verdict.truncated(4096) == Next()


def test_a_revision_gives_a_fresh_working_budget():
    verdict = Verdict(max_turns=2)
    acting_turn(verdict)
    acting_turn(verdict)
    assert after(verdict, accepted=DONE, done_called=True) == Next(grade=DONE)

    assert verdict.graded("needs_revision") is None

    assert (verdict.phase, verdict.iteration, verdict.budget_start, verdict.turns_used) == (Phase.WORKING, 1, 2, 0)
    assert acting_turn(verdict) == Next()
    assert acting_turn(verdict).message == prompts.VERDICT_NOW


def test_spent_iterations_ask_for_one_acknowledgment_where_a_valid_done_replaces_the_last():
    verdict = Verdict(max_turns=3)
    after(verdict, accepted=DONE, done_called=True)

    assert verdict.graded("max_iterations_reached") is None
    assert verdict.phase is Phase.ACKNOWLEDGING

    verdict.acknowledged(FAILED_DONE)
    ending = verdict.last_verdict()

    assert (ending.status, ending.error_code, ending.output) == (Run.Status.FAILED, "task_failed", "No products.")


def test_an_acknowledgment_without_a_valid_done_keeps_the_last_done():
    verdict = Verdict(max_turns=3)
    after(verdict, accepted=DONE, done_called=True)
    verdict.graded("max_iterations_reached")

    verdict.acknowledged(None)

    assert verdict.last_verdict() == Ending.verdict(DONE)
    assert verdict.empty_reply().ending == Ending.verdict(DONE)
    assert verdict.truncated(4096).ending == Ending.verdict(DONE)


@pytest.mark.parametrize("result", ["satisfied", "failed", "interrupted"])
def test_a_terminal_grade_ends_the_run_with_the_accepted_done(result):
    verdict = Verdict(max_turns=3)
    after(verdict, accepted=FAILED_DONE, done_called=True)

    assert verdict.graded(result) == Ending.verdict(FAILED_DONE)


def test_only_an_accepted_done_is_graded_or_acknowledged():
    verdict = Verdict(max_turns=3)

    with pytest.raises(RuntimeError):
        verdict.graded("satisfied")
    with pytest.raises(RuntimeError):
        verdict.last_verdict()
