"""The run's phase and every transition of its verdict turn, as one pure object: the loop tells it what a reply did
and it answers what comes next. No database, no thread, no model profile: a test drives it with plain values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from agent_platform.lib.text import bounded
from runs.models import Run

from . import notices, prompts

# A done whose data violates the schema on the verdict turn gets this many more verdict requests to correct it.
VERDICT_CORRECTIONS = 2
# Replies cut off at max_tokens in a row before the run gives up: each one raises the limit, up to the model's.
MAX_TRUNCATIONS = 3
# How much of the last refused done's detail a run's error message carries.
REFUSAL_DETAIL_MAX_CHARS = 1_000


class Phase(Enum):
    """Where the run's conversation is, which decides what the agent's next reply may do."""

    WORKING = "working"  # action turns: every tool runs, within the turn cap, the failure budget and the cost cap
    VERDICT_TURN = "verdict_turn"  # the verdict was asked for (turn cap, failures, cost cap or prose): only done runs
    ACKNOWLEDGING = "acknowledging"  # the outcome's iterations are spent: one last reply, where only a done counts


@dataclass
class Ending:
    """How a run ends, as lifecycle.finish records it."""

    status: str
    error_code: str = ""
    message: str = ""
    success: bool | None = None
    output: str = ""
    data: Any = None

    @classmethod
    def failed(cls, error_code: str, message: str) -> Ending:
        return cls(Run.Status.FAILED, error_code, message)

    @classmethod
    def verdict(cls, done: dict[str, Any]) -> Ending:
        """The agent's verdict as it gave it: the platform does not verify it."""
        if done["success"]:
            return cls(Run.Status.SUCCEEDED, success=True, output=done["output"], data=done.get("data"))
        return cls(
            Run.Status.FAILED,
            Run.ErrorCode.TASK_FAILED,
            "The agent reported that it could not complete the task; its account is in output.",
            success=False,
            output=done["output"],
            data=done.get("data"),
        )


@dataclass(frozen=True)
class Next:
    """What the loop does after a reply: end the run, grade an accepted done, or send the next request, with
    `message` (a text for the agent) after the results when there is one."""

    ending: Ending | None = None
    grade: dict[str, Any] | None = None
    message: str | None = None


CONTINUE = Next()


class Verdict:
    """The action-turn budget, the failure budget and the verdict turn of one run, with the signals they give."""

    def __init__(self, max_turns: int) -> None:
        self.max_turns = max_turns
        self.phase = Phase.WORKING
        self.turns = 0  # action turns used in the whole run
        self.budget_start = 0  # where the current action-turn budget started (a revision gives a fresh one)
        self.consecutive_errors = 0
        self.failures_max = False
        self.reason = "none"  # what brought the verdict turn: none, cap, failures, budget or prose
        self.followed: bool | None = None  # whether the agent called done on it; None until a reply decides
        self.corrections = 0
        self.nudged_empty = False
        self.truncations = 0
        self.iteration = 0  # the outcome's evaluation cycle
        self.last_done: dict[str, Any] | None = None
        # Dones refused since the last accepted one, and the last refusal's detail: a verdict turn missed after them
        # says so instead of "did not call done".
        self.refused_dones = 0
        self.last_refusal = ""

    # --- what the agent's calls did ------------------------------------------------------------------------

    def call_answered(self, *, is_error: bool) -> None:
        """A tool call's result: errors in a row spend the failure budget, a success refills it."""
        self.consecutive_errors = self.consecutive_errors + 1 if is_error else 0

    def done_refused(self, detail: str) -> None:
        self.refused_dones += 1
        self.last_refusal = detail

    def action_turn(self) -> None:
        """The reply ran an action (a browser call or an extract): it is an action turn."""
        self.turns += 1

    @property
    def turns_used(self) -> int:
        """Action turns used of the current budget."""
        return self.turns - self.budget_start

    @property
    def pending(self) -> bool:
        """On the verdict turn, before a reply was counted as following it or not (the verdict_followed signal)."""
        return self.phase is Phase.VERDICT_TURN and self.followed is None

    # --- transitions --------------------------------------------------------------------------------------------

    def start(self, reason: str) -> None:
        """The next request asks for the verdict; the signals say why, and whether the agent follows it."""
        self.phase = Phase.VERDICT_TURN
        self.corrections = 0
        self.reason = reason
        self.followed = None

    def cost_cap_near(self) -> bool:
        """The next request fits the cost cap but the one after would not: while working, that request becomes the
        verdict turn (the loop adds the notice saying why). Whether it did."""
        if self.phase is not Phase.WORKING:
            return False
        self.start("budget")
        return True

    def extract_refused_at_cost_cap(self) -> None:
        """An extract refused at the cost cap starts the verdict turn within the reply: the next reply answers it."""
        self.start("budget")

    def after_results(
        self, *, acted: bool, accepted: dict[str, Any] | None, done_called: bool, replied_in: Phase
    ) -> Next:
        """After a reply's tool results: an accepted done is graded (or ends the run), a verdict turn without one
        ends it (or lets a refused done be corrected), and otherwise the results go back, with the verdict turn asked
        for when the action budget or the failure budget is spent."""
        if self.consecutive_errors >= notices.FAILURE_LIMIT:
            self.failures_max = True
        if accepted is not None:
            if self.pending:
                self.followed = True
            self.last_done = accepted
            self.refused_dones, self.last_refusal = 0, ""
            return Next(grade=accepted)
        if replied_in is Phase.VERDICT_TURN:
            if done_called and self.corrections < VERDICT_CORRECTIONS:
                # a done with data the schema refused: the verdict turn goes on so the agent can correct it
                self.corrections += 1
                return CONTINUE
            return Next(ending=self.missed())
        # A verdict turn that started within this reply (an extract refused at the cost cap) is asked for below and
        # answered by the next reply: whether the agent follows it is decided then, not by this reply.
        if acted and self.turns_used >= self.max_turns:
            self.start("cap")
        elif self.consecutive_errors >= notices.FAILURE_LIMIT:
            self.start("failures")
        if self.phase is Phase.VERDICT_TURN:
            return Next(message=prompts.VERDICT_NOW)  # after the results: the API wants those first
        return CONTINUE

    def graded(self, result: str) -> Ending | None:
        """The outcome's grade of the accepted done: a revision gives a fresh working budget, spent iterations ask
        for one acknowledgment; anything else ends the run with that done."""
        if self.last_done is None:
            raise RuntimeError("only an accepted done is graded")
        if result == "needs_revision":
            self.iteration += 1
            self.budget_start = self.turns
            self.consecutive_errors = 0
            self.phase = Phase.WORKING
            self.nudged_empty = False
            return None
        if result == "max_iterations_reached":
            # asked for in a user message, like the verdict turn: no tool is forced
            self.phase = Phase.ACKNOWLEDGING
            return None
        return Ending.verdict(self.last_done)

    def acknowledged(self, accepted: dict[str, Any] | None) -> None:
        """A done of the acknowledgment turn: a valid one replaces the last accepted done."""
        if accepted is not None:
            self.last_done = accepted

    def last_verdict(self) -> Ending:
        """The acknowledgment turn's ending: the last accepted done (kept before that turn is asked)."""
        if self.last_done is None:
            raise RuntimeError("the acknowledgment turn comes only after an accepted done")
        return Ending.verdict(self.last_done)

    def prose(self) -> Next:
        """A reply without any tool call: the agent is asked once, in a user message, to call done, and that request
        is the verdict turn; prose on a verdict turn ends the run."""
        if self.phase is Phase.VERDICT_TURN:
            return Next(ending=self.missed())
        self.start("prose")
        return Next(message=prompts.ASK_FOR_DONE)

    def empty_reply(self) -> Next:
        """A reply with no content: answered once with a short nudge; the next one is treated as prose."""
        if self.phase is Phase.ACKNOWLEDGING:
            return Next(ending=self.last_verdict())
        if self.phase is Phase.VERDICT_TURN:
            return Next(ending=self.missed())
        if not self.nudged_empty:
            self.nudged_empty = True
            return Next(message=prompts.EMPTY_REPLY)
        return self.prose()

    def truncated(self, max_tokens: int) -> Next:
        """A reply cut off at max_tokens (`max_tokens` its limit): the run gives up after too many in a row; on the
        acknowledgment turn the last done stands; otherwise the loop answers it and goes on."""
        self.truncations += 1
        if self.truncations > MAX_TRUNCATIONS:
            return Next(
                ending=Ending.failed(
                    Run.ErrorCode.MODEL_ERROR,
                    f"The model's replies were cut off at max_tokens ({max_tokens}) {MAX_TRUNCATIONS + 1} times in "
                    "a row.",
                ),
            )
        if self.phase is Phase.ACKNOWLEDGING:
            return Next(ending=self.last_verdict())
        return CONTINUE

    def complete_reply(self) -> None:
        """A reply that was not cut off ends a run of truncations."""
        self.truncations = 0

    def missed(self) -> Ending:
        """The verdict turn passed without an accepted done: the run fails, saying what brought the verdict turn (and,
        when the agent did call done, that every call was refused and why)."""
        self.followed = False
        if self.refused_dones:
            return self.every_done_refused()
        if self.reason == "cap":
            return Ending.failed(
                Run.ErrorCode.AGENT_LIMIT,
                f"The agent used its {self.max_turns} action turns and did not call done on its verdict turn.",
            )
        if self.reason == "budget":
            return Ending.failed(
                Run.ErrorCode.COST_LIMIT,
                "The run reached its cost cap and the agent did not call done on its verdict turn.",
            )
        if self.reason == "failures":
            return Ending.failed(
                Run.ErrorCode.AGENT_LIMIT,
                f"{notices.FAILURE_LIMIT} tool calls failed in a row and the agent did not call done on its verdict "
                "turn.",
            )
        return Ending.failed(
            Run.ErrorCode.AGENT_INCOMPLETE,
            "The agent replied in prose without calling done, was asked once to call it, and did not call it on its "
            "verdict turn.",
        )

    def every_done_refused(self) -> Ending:
        code, why = {
            "cap": (Run.ErrorCode.AGENT_LIMIT, f"The agent used its {self.max_turns} action turns"),
            "budget": (Run.ErrorCode.COST_LIMIT, "The run reached its cost cap"),
            "failures": (Run.ErrorCode.AGENT_LIMIT, f"{notices.FAILURE_LIMIT} tool calls failed in a row"),
        }.get(self.reason, (Run.ErrorCode.AGENT_INCOMPLETE, "The agent was asked to call done after a reply in prose"))
        calls = f"{self.refused_dones} call{'s' if self.refused_dones != 1 else ''}"
        detail = bounded(" ".join(self.last_refusal.split()), REFUSAL_DETAIL_MAX_CHARS)
        return Ending.failed(code, f"{why}, and every done the agent called was refused ({calls}); the last: {detail}")

    # --- signals ------------------------------------------------------------------------------------------------

    def signals(self, *, budget_notices: int, loop_nudges: int, stagnation_nudges: int) -> dict[str, Any]:
        """The run's signals: the budgets' and the verdict turn's, with the notice tracker's counters given."""
        return {
            "turns": self.turns,
            "max_turns": self.max_turns,
            "budget_notices": budget_notices,
            "loop_nudges": loop_nudges,
            "stagnation_nudges": stagnation_nudges,
            "failures_max": self.failures_max,
            "verdict_turn": self.reason,
            "verdict_followed": self.followed,
        }
