"""The runtime's notices: the `[notice]` lines appended to tool results, decided by pure functions of the run's state."""

import math
from dataclasses import dataclass

PREFIX = "[notice]"
# Consecutive tool errors that bring the verdict turn forward (the spec's failure budget).
FAILURE_LIMIT = 5
# The failure budget is announced from this many consecutive errors on: one error is often just a stale ref.
FAILURE_NOTICE_FROM = 2
# A page whose fingerprint stayed the same across this many consecutive acting turns stopped changing.
STAGNATION_TURNS = 3
# Members that only look at the page: a page that does not change while the agent reads it is no sign of a stall.
READ_ONLY_MEMBERS = frozenset({"read_page", "find", "get_page_text", "screenshot", "list_tabs", "zoom"})


def budget_notice(turns_used: int, max_turns: int) -> str | None:
    """Remaining action turns, from 75% of max_turns on; the last action turn; and the end of the budget."""
    remaining = max_turns - turns_used
    if remaining <= 0:
        return (
            f"{PREFIX} That was your last action turn ({max_turns} of {max_turns} used). "
            "Call done now with your verdict; any other tool will be refused (verdict_required)."
        )
    if remaining == 1:
        return (
            f"{PREFIX} Your next turn is your last action turn ({turns_used} of {max_turns} used); "
            "after it you must call done."
        )
    if turns_used >= math.ceil(0.75 * max_turns):
        return f"{PREFIX} {remaining} action turns remain ({turns_used} of {max_turns} used)."
    return None


def failure_notice(consecutive_errors: int, limit: int = FAILURE_LIMIT) -> str | None:
    """How much of the failure budget is left, once errors start to pile up."""
    if consecutive_errors >= limit:
        return (
            f"{PREFIX} {consecutive_errors} tool calls failed in a row: the failure budget is spent. "
            "Call done now with your verdict; any other tool will be refused (verdict_required)."
        )
    if consecutive_errors >= FAILURE_NOTICE_FROM:
        left = limit - consecutive_errors
        return (
            f"{PREFIX} {consecutive_errors} tool calls failed in a row; {left} more "
            f"failure{'s' if left != 1 else ''} and you will have to give your verdict."
        )
    return None


def repeated_action_notice(name: str) -> str:
    return (
        f"{PREFIX} You repeated your previous action ({name} with the same input). "
        "If it did not do what you wanted the first time, try something different."
    )


def stagnation_notice(turns: int) -> str:
    return (
        f"{PREFIX} The page has not changed over the last {turns} turns (same URL and content): "
        "your actions are having no visible effect. Try a different approach, or call done if you are stuck."
    )


@dataclass
class NoticeTracker:
    """What the runtime remembers between turns to decide its notices, and how many of each it showed."""

    max_turns: int
    budget_notices: int = 0
    loop_nudges: int = 0
    stagnation_nudges: int = 0
    previous_action: tuple[str, object] | None = None
    fingerprint: str | None = None
    unchanged_turns: int = 1

    def for_turn(
        self,
        *,
        actions: list[tuple[str, dict[str, object]]],
        turns_used: int,
        consecutive_errors: int,
        fingerprint: str | None = None,
        acted: bool | None = None,
    ) -> list[str]:
        """The notice lines for one turn's tool results, counting each kind shown.

        `actions` are the browser members the turn ran, as (name, input), in order; empty for a turn that only
        called done. `turns_used` counts the action turns of the current budget, this one included. `fingerprint`
        is the page's after the turn, when it was taken; `acted` says whether an action that can change the page
        succeeded (by default: any member that is not read-only), since a failed click is no sign of a stalled page.
        """
        lines: list[str] = []
        if actions:
            budget = budget_notice(turns_used, self.max_turns)
            if budget:
                lines.append(budget)
                self.budget_notices += 1
            repeated = self._repeated(actions)
            if repeated:
                lines.append(repeated_action_notice(repeated))
                self.loop_nudges += 1
            if acted is None:
                acted = any(name not in READ_ONLY_MEMBERS for name, _ in actions)
            if self._stagnated(acted, fingerprint):
                lines.append(stagnation_notice(self.unchanged_turns))
                self.stagnation_nudges += 1
        failures = failure_notice(consecutive_errors)
        if failures:
            lines.append(failures)
        return lines

    def reset_budget(self) -> None:
        """A revision starts a fresh action-turn budget; what the agent did before still counts for repeats."""
        self.unchanged_turns = 1

    def _repeated(self, actions: list[tuple[str, dict[str, object]]]) -> str | None:
        repeated = None
        for name, member_input in actions:
            action = (name, member_input)
            if self.previous_action == action:
                repeated = name
            self.previous_action = action
        return repeated

    def _stagnated(self, acted: bool, fingerprint: str | None) -> bool:
        if fingerprint is None:
            return False
        if fingerprint != self.fingerprint:
            self.fingerprint = fingerprint
            self.unchanged_turns = 1
            return False
        if not acted:
            return False  # reading a page that stands still neither proves nor disproves a stall
        self.unchanged_turns += 1
        return self.unchanged_turns >= STAGNATION_TURNS
