"""A run's checkpoints: what another worker needs to continue it from its last committed turn (runs.handover).

Each is taken on the loop's thread just before a model request (the conversation as that request will send it, and
what the loop remembers between turns) and written by the run's lane with that turn's record, in its transaction,
with the browser's storage state as last read (sealed) and the URL the agent's tab was at. The conversation is kept
as JSON text, so the assistant turns are sent again exactly as the model returned them (thinking signatures
included, which the API checks); each checkpoint holds only the messages since the previous one, and the previous
one's last (the loop adds text to the last user message: a steer, a notice, an outcome's revision request).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from runs.handover import why_handed_over
from runs.models import Run, RunCheckpoint
from runs.secret_box import seal, seal_value, unseal, unseal_value
from runs.spending import LastRequest

from .context import ContextState
from .notices import NoticeTracker
from .verdict import Phase

if TYPE_CHECKING:
    from .loop import AgentLoop


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
    messages: list[dict[str, Any]]
    loop_state: dict[str, Any]
    browser_state: dict[str, Any] | None
    url: str
    cause: str


def take(loop: AgentLoop, written_messages: int) -> Taken:
    """The loop's checkpoint now; `written_messages`: how many messages the previous checkpoint held (0: none)."""
    first = max(written_messages - 1, 0)
    return Taken(
        turn=loop.replies,
        first_message=first,
        messages=json.dumps(loop.messages[first:], separators=(",", ":"), ensure_ascii=False),
        loop_state=loop_state(loop),
        url=loop.last_url,
    )


def loop_state(loop: AgentLoop) -> dict[str, Any]:
    """What the loop remembers between turns, as JSON. A secret answered to ask_human is sealed with it: like the
    launch's secrets (sealed on the run), the continuing worker types it and every record masks it."""
    verdict = {name: value for name, value in vars(loop.verdict).items() if name != "phase"}
    answers = {name: loop.run.secrets[name] for name in sorted(loop.answer_names) if name in loop.run.secrets}
    return {
        "replies": loop.replies,
        "pauses": loop.pauses,
        "max_tokens": loop.max_tokens,
        "browser_recoveries": loop.recoveries,
        "elapsed_seconds": loop.elapsed(),
        "phase": loop.verdict.phase.name,
        "verdict": verdict,
        "tracker": asdict(loop.tracker),
        "context": {
            "horizon": loop.context_state.horizon,
            "dropped_exchanges": loop.context_state.dropped_exchanges,
        },
        "result_labels": loop.result_labels,
        "last_request": asdict(loop.last_request) if loop.last_request is not None else None,
        "sent_tokens": loop.sent_tokens,
        "cache_kept": loop.cache_kept,
        "started_clean": loop.started_clean,
        "answers": seal_value(answers) if answers else "",
    }


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
    """The run's conversation and loop state as its last checkpoint left them; None when it has none (it was lost
    before its first model request: it starts over)."""
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
        messages=messages,
        loop_state=last.loop_state,
        browser_state=state or None,
        url=last.url,
        cause=why_handed_over(run),
    )


def restore(loop: AgentLoop, resumed: Resumption) -> None:
    """Put the loop back where the checkpoint left it (the conversation, the verdict phase and budgets, the notice
    tracker, what the context guard decided, the cost estimate's last request, the run's elapsed time)."""
    state = resumed.loop_state
    loop.messages = resumed.messages
    loop.replies = state["replies"]
    loop.pauses = state["pauses"]
    loop.max_tokens = state["max_tokens"]
    loop.recoveries = state["browser_recoveries"]
    loop.started -= state["elapsed_seconds"]
    for name, value in state["verdict"].items():
        setattr(loop.verdict, name, value)
    loop.verdict.phase = Phase[state["phase"]]
    tracker = dict(state["tracker"])
    if tracker["previous_action"] is not None:
        tracker["previous_action"] = tuple(tracker["previous_action"])
    loop.tracker = NoticeTracker(**tracker)
    loop.context_state = ContextState(**state["context"])
    loop.result_labels = dict(state["result_labels"])
    loop.last_request = LastRequest(**state["last_request"]) if state["last_request"] else None
    loop.sent_tokens = state["sent_tokens"]
    loop.cache_kept = state["cache_kept"]
    loop.started_clean = state["started_clean"]
    answers: dict[str, str] = unseal_value(state["answers"]) if state["answers"] else {}
    loop.run.secrets.update(answers)
    loop.answer_names = set(answers)
