"""A run's checkpoints: what another worker needs to continue it from its last committed turn (runs.handover).

What the loop remembers between turns is one value, LoopState, and a checkpoint is that value. Each is taken on the
loop's thread just before a model request (the conversation as that request will send it, and the rest of the state)
and written by the run's lane with that turn's record, in its transaction, with the browser's storage state as last
read (sealed) and the URL the agent's tab was at. The conversation is kept as JSON text, so the assistant turns are
sent again exactly as the model returned them (thinking signatures included, which the API checks); each checkpoint
holds only the messages since the previous one, and the previous one's last (the loop adds text to the last user
message: a steer, a notice, an outcome's revision request).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from runs.handover import why_handed_over
from runs.models import Run, RunCheckpoint
from runs.secret_box import seal, seal_value, unseal, unseal_value
from runs.spending import LastRequest

from .context import ContextState
from .notices import NoticeTracker
from .run_browser import BrowserProgress
from .verdict import Phase, Verdict


@dataclass
class LoopState:
    """What the agent loop remembers between turns, which is what a handover carries to the worker that continues the
    run: the conversation, the verdict phase and budgets, the notice tracker, what the context guard decided, the cost
    estimate's last request, the run's elapsed time, the secrets answered to ask_human, and where its browser is."""

    max_tokens: int
    verdict: Verdict
    tracker: NoticeTracker
    messages: list[dict[str, Any]] = field(default_factory=list)
    replies: int = 0
    pauses: int = 0  # pause_turn replies in a row
    # Seconds the run had been going when the state was taken (on earlier workers too), less its waits for a person.
    elapsed_seconds: float = 0.0
    context: ContextState = field(default_factory=ContextState)
    result_labels: dict[str, str] = field(default_factory=dict)  # how a placeholder names each tool result
    last_request: LastRequest | None = None
    sent_tokens: int = 0
    cache_kept: bool = False
    # Secrets answered to ask_human, by name: sealed in a checkpoint like the launch's (sealed on the run); the
    # continuing worker types them and every record masks them.
    answers: dict[str, str] = field(default_factory=dict)
    browser: BrowserProgress = field(default_factory=BrowserProgress)

    @classmethod
    def start(cls, max_turns: int, max_tokens: int) -> LoopState:
        """A run's state before its first request."""
        return cls(max_tokens=max_tokens, verdict=Verdict(max_turns), tracker=NoticeTracker(max_turns))


def encode(state: LoopState) -> dict[str, Any]:
    """The state as the JSON a checkpoint row keeps, less its conversation and its URL (columns of their own)."""
    verdict = {name: value for name, value in vars(state.verdict).items() if name != "phase"}
    return {
        "replies": state.replies,
        "pauses": state.pauses,
        "max_tokens": state.max_tokens,
        "browser_recoveries": state.browser.recoveries,
        "elapsed_seconds": state.elapsed_seconds,
        "phase": state.verdict.phase.name,
        "verdict": verdict,
        "tracker": asdict(state.tracker),
        "context": {"horizon": state.context.horizon, "dropped_exchanges": state.context.dropped_exchanges},
        "result_labels": state.result_labels,
        "last_request": asdict(state.last_request) if state.last_request is not None else None,
        "sent_tokens": state.sent_tokens,
        "cache_kept": state.cache_kept,
        "started_clean": state.browser.started_clean,
        "answers": seal_value(state.answers) if state.answers else "",
    }


def decode(stored: dict[str, Any], messages: list[dict[str, Any]], url: str) -> LoopState:
    """The state `encode` gave, with its conversation and URL."""
    verdict = Verdict(stored["verdict"]["max_turns"])
    for name, value in stored["verdict"].items():
        setattr(verdict, name, value)
    verdict.phase = Phase[stored["phase"]]
    tracker = dict(stored["tracker"])
    if tracker["previous_action"] is not None:
        tracker["previous_action"] = tuple(tracker["previous_action"])
    return LoopState(
        max_tokens=stored["max_tokens"],
        verdict=verdict,
        tracker=NoticeTracker(**tracker),
        messages=messages,
        replies=stored["replies"],
        pauses=stored["pauses"],
        elapsed_seconds=stored["elapsed_seconds"],
        context=ContextState(**stored["context"]),
        result_labels=dict(stored["result_labels"]),
        last_request=LastRequest(**stored["last_request"]) if stored["last_request"] else None,
        sent_tokens=stored["sent_tokens"],
        cache_kept=stored["cache_kept"],
        answers=unseal_value(stored["answers"]) if stored["answers"] else {},
        browser=BrowserProgress(
            url=url, recoveries=stored["browser_recoveries"], started_clean=stored["started_clean"]
        ),
    )


@dataclass
class Taken:
    """A checkpoint taken on the loop's thread, written later by the lane."""

    turn: int
    first_message: int
    messages: str
    loop_state: dict[str, Any]
    url: str


@dataclass
class Resumption:
    """The last checkpoint of a handed-over run, read back for the worker continuing it."""

    turn: int
    state: LoopState
    browser_state: dict[str, Any] | None
    cause: str


def take(state: LoopState, written_messages: int) -> Taken:
    """A checkpoint of `state`; `written_messages`: how many messages the previous checkpoint held (0: none)."""
    first = max(written_messages - 1, 0)
    return Taken(
        turn=state.replies,
        first_message=first,
        messages=json.dumps(state.messages[first:], separators=(",", ":"), ensure_ascii=False),
        loop_state=encode(state),
        url=state.browser.url,
    )


def write(run: Run, handovers: int, taken: Taken, browser_state: dict[str, Any] | None) -> None:
    """On the lane, in the turn record's transaction. Only the newest browser state is kept: an older one is cleared
    once a newer one is written (a turn whose state could not be read keeps the one before)."""
    if browser_state:
        RunCheckpoint.objects.filter(run=run).exclude(browser_state={}).update(browser_state={})
    RunCheckpoint.objects.create(
        run=run,
        turn=taken.turn,
        handovers=handovers,
        first_message=taken.first_message,
        messages=taken.messages,
        loop_state=taken.loop_state,
        browser_state=seal(browser_state) if browser_state else {},
        url=taken.url,
    )


def resumption(run: Run) -> Resumption | None:
    """The run's state as its last checkpoint left it; None when it has none (it was lost before its first model
    request: it starts over)."""
    messages: list[dict[str, Any]] = []
    last: RunCheckpoint | None = None
    sealed_state: dict[str, Any] = {}
    for checkpoint in RunCheckpoint.objects.filter(run=run).order_by("id"):
        del messages[checkpoint.first_message :]
        messages.extend(json.loads(checkpoint.messages))
        last = checkpoint
        sealed_state = checkpoint.browser_state or sealed_state
    if last is None:
        return None
    state = unseal(sealed_state) if sealed_state else None
    return Resumption(
        turn=last.turn,
        state=decode(last.loop_state, messages, last.url),
        browser_state=state or None,
        cause=why_handed_over(run),
    )
