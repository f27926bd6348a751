"""What of a run's conversation is sent: the server-side context management to ask for, and a client-side guard that
keeps every request under the model's window, 100 images and 32 MB while the stored history stays whole."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from agent_platform.lib.request_size import Size, size_of

COMPACT = "compact_20260112"
CLEAR_TOOL_USES = "clear_tool_uses_20250919"
# Beta headers the SDK sends with each strategy.
BETAS = {COMPACT: "compact-2026-01-12", CLEAR_TOOL_USES: "context-management-2025-06-27"}

MAX_IMAGES = 100
# A model whose window the Models API does not report is assumed to have the smallest current one.
UNKNOWN_WINDOW = 200_000
MAX_REQUEST_BYTES = 32 * 1024 * 1024
# The API's smallest compaction trigger, and the one it uses by default.
COMPACTION_TRIGGER_MIN = 50_000
COMPACTION_TRIGGER_DEFAULT = 150_000
# Page text or a snapshot longer than this, once the agent has moved past it, keeps only its head.
SHORTEN_OVER_CHARS = 1_500
SHORTENED_HEAD_CHARS = 300
# The latest tool results are never touched: the agent is reading them.
KEEP_RECENT_USER_MESSAGES = 2
# Tools whose results are small and are the agent's own findings: never cleared.
KEEP_TOOLS = ("done", "extract")
EVENT_IDS_MAX = 50


class Profile(Protocol):
    """What the guard needs of a model's profile (agent_platform.llm.ModelProfile has it)."""

    @property
    def max_input_tokens(self) -> int | None: ...
    @property
    def image_input(self) -> bool: ...
    @property
    def context_management(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class DefaultProfile:
    """For a model the Models API did not describe: the smallest current window, images, no server-side strategy."""

    max_input_tokens: int | None = UNKNOWN_WINDOW
    image_input: bool = True
    context_management: tuple[str, ...] = ()


DEFAULT_PROFILE = DefaultProfile()


@dataclass(frozen=True)
class Budget:
    """Three marks per measure: past `high` the guard acts, and then in one step down to `low`, so the prefix it
    sends stays byte-stable (and cached) for many turns; `hard` is what the API refuses."""

    high: Size
    low: Size
    hard: Size

    @classmethod
    def for_profile(cls, profile: Profile, overhead: Size = Size()) -> Budget:
        window = profile.max_input_tokens or UNKNOWN_WINDOW
        # The API's tokenizer counts more than four characters a token on some text: keep a margin under the window.
        hard_tokens = int(window * 0.85) - overhead.tokens
        # Past 200K tokens a request costs more than the page texts it carries are worth, even on a 1M window.
        high_tokens = min(int(window * 0.6), 200_000) - overhead.tokens
        hard = Size(hard_tokens, MAX_IMAGES, MAX_REQUEST_BYTES - overhead.bytes - 256 * 1024)
        high = Size(min(high_tokens, hard_tokens), 80, min(20 * 1024 * 1024, hard.bytes))
        low = Size(high.tokens // 2, 40, high.bytes // 2)
        return cls(high=high, low=low, hard=hard)


@dataclass(frozen=True)
class ContextState:
    """What the guard decided so far, kept by the loop between requests: messages before `horizon` are sent trimmed,
    and the first `dropped_exchanges` exchanges after the task are not sent at all."""

    horizon: int = 0
    dropped_exchanges: int = 0
    # Sizes and trimmed forms already computed, by message (kept alive here, so its id is not reused) and length.
    # Each entry: (message, its size, its trimmed form, that form's size, what trimming took out).
    memo: dict[tuple[int, int, bool], tuple[dict[str, Any], Size, dict[str, Any], Size, Dropped]] = field(
        default_factory=dict, compare=False, repr=False
    )


@dataclass
class Dropped:
    """What one step of the guard took out of what is sent, for the context.cleared event."""

    screenshots: list[str] = field(default_factory=list)
    page_texts: list[str] = field(default_factory=list)
    exchanges: int = 0
    tokens_saved: int = 0
    reason: str = ""

    def __bool__(self) -> bool:
        return bool(self.screenshots or self.page_texts or self.exchanges)

    def as_event(self, turn: int, tokens_sent: int) -> dict[str, Any]:
        return {
            "turn": turn,
            "reason": self.reason,
            "screenshots": len(self.screenshots),
            "page_texts": len(self.page_texts),
            "exchanges": self.exchanges,
            # Which results, by tool_use id (the timeline's agent.tool_result events carry the same ids).
            "tool_use_ids": sorted(set(self.screenshots + self.page_texts))[:EVENT_IDS_MAX],
            "tokens_saved": self.tokens_saved,
            "tokens_sent": tokens_sent,
        }


@dataclass
class Prepared:
    """The messages to send this time, the state to keep for the next request, and what this step dropped."""

    messages: list[dict[str, Any]]
    state: ContextState
    size: Size
    dropped: Dropped


# --- the server side ----------------------------------------------------------------------------------------------


def context_management(profile: Profile | None) -> dict[str, Any] | None:
    """The `context_management` parameter for this model: server-side compaction where it is offered (the documented
    first choice for long conversations), else tool-result clearing in large steps; None where neither is."""
    if profile is None:
        return None
    strategies = tuple(profile.context_management or ())
    window = profile.max_input_tokens or UNKNOWN_WINDOW
    if COMPACT in strategies:
        trigger = max(COMPACTION_TRIGGER_MIN, min(COMPACTION_TRIGGER_DEFAULT, window // 2))
        return {"edits": [{"type": COMPACT, "trigger": {"type": "input_tokens", "value": trigger}}]}
    if CLEAR_TOOL_USES in strategies:
        trigger = max(COMPACTION_TRIGGER_MIN, min(COMPACTION_TRIGGER_DEFAULT, window // 2))
        return {
            "edits": [
                {
                    "type": CLEAR_TOOL_USES,
                    "trigger": {"type": "input_tokens", "value": trigger},
                    "keep": {"type": "tool_uses", "value": 4},
                    # Clearing invalidates the cache from the cleared point: clear half the prompt at once, not a
                    # little every turn.
                    "clear_at_least": {"type": "input_tokens", "value": trigger // 2},
                    "exclude_tools": list(KEEP_TOOLS),
                }
            ]
        }
    return None


def betas_for(param: dict[str, Any] | None) -> list[str]:
    """The beta headers a context_management parameter needs."""
    if not param:
        return []
    return sorted({BETAS[edit["type"]] for edit in param.get("edits", ()) if edit.get("type") in BETAS})


# --- trimming what the agent has moved past -----------------------------------------------------------------------


def screenshot_placeholder(label: str) -> dict[str, Any]:
    return {"type": "text", "text": f"[screenshot {label} left the conversation to save context]"}


def shortened(text: str, label: str) -> str:
    rest = len(text) - SHORTENED_HEAD_CHARS
    return (
        f"{text[:SHORTENED_HEAD_CHARS]}\n[… {rest:,} more characters of this page text ({label}) left the "
        "conversation to save context; read the page again if you need them]"
    )


def _trim_result(block: dict[str, Any], label: str, dropped: Dropped) -> dict[str, Any]:
    """A tool_result with its images replaced by placeholders and its long texts shortened: same id, same place."""
    content = block.get("content")
    use_id = str(block.get("tool_use_id", ""))
    if isinstance(content, str):
        if len(content) <= SHORTEN_OVER_CHARS:
            return block
        dropped.page_texts.append(use_id)
        return {**block, "content": shortened(content, label)}
    if not isinstance(content, list):
        return block
    changed = False
    new_content = []
    for item in content:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "image":
            replacement = screenshot_placeholder(label)
            if item.get("cache_control"):
                replacement["cache_control"] = item["cache_control"]
            new_content.append(replacement)
            dropped.screenshots.append(use_id)
            changed = True
        elif kind == "text" and len(item.get("text", "")) > SHORTEN_OVER_CHARS:
            new_content.append({**item, "text": shortened(item["text"], label)})
            dropped.page_texts.append(use_id)
            changed = True
        else:
            new_content.append(item)
    return {**block, "content": new_content} if changed else block


def trimmed(message: dict[str, Any], labels: dict[str, str], dropped: Dropped) -> dict[str, Any]:
    """A user message as it is sent once the agent has moved past it; assistant turns (thinking, tool_use) are never
    changed, and every tool_result keeps its tool_use_id, so pairing holds."""
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return message
    new_content = []
    changed = False
    for block in content:
        if not isinstance(block, dict):
            new_content.append(block)
            continue
        if block.get("type") == "tool_result":
            use_id = str(block.get("tool_use_id", ""))
            label = labels.get(use_id, f"of tool call {use_id}")
            new_block = _trim_result(block, label, dropped)
        elif block.get("type") == "image":
            new_block = screenshot_placeholder("sent with an earlier message")
            dropped.screenshots.append("")
        else:
            new_block = block
        changed = changed or new_block is not block
        new_content.append(new_block)
    return {**message, "content": new_content} if changed else message


def _protected_from(messages: list[dict[str, Any]]) -> int:
    """The index from which messages are never trimmed: the last few user messages and what follows them."""
    seen = 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            seen += 1
            if seen == KEEP_RECENT_USER_MESSAGES:
                return index
    return 0


def _without_exchanges(messages: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The task message, a note of what left, then the conversation after the first `count` exchanges (each an
    assistant turn and the user message answering it, so every tool_use keeps its tool_result)."""
    if count <= 0:
        return messages
    first = messages[0]
    note = {
        "type": "text",
        "text": f"[{count} earlier exchange{'s' if count != 1 else ''} of this run left the conversation to save "
        "context; the run's timeline keeps them]",
    }
    content = first.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return [{**first, "content": [*blocks, note]}, *messages[1 + 2 * count :]]


def _exchange_limit(messages: list[dict[str, Any]], protected: int) -> int:
    """How many leading (assistant, user) exchanges after the task could leave without touching the recent ones."""
    limit = 0
    index = 1
    while (
        index + 1 < protected
        and messages[index].get("role") == "assistant"
        and messages[index + 1].get("role") == "user"
    ):
        limit += 1
        index += 2
    return limit


def prepare(
    messages: list[dict[str, Any]],
    profile: Profile,
    state: ContextState = ContextState(),
    *,
    labels: dict[str, str] | None = None,
    overhead: Size = Size(),
) -> Prepared:
    """The messages to send for this request, never more than the model's window, 100 images or 32 MB.

    Messages before `state.horizon` are sent trimmed (screenshots as one-line placeholders, long page texts
    shortened); the horizon moves only when a measure passes its high mark, and then far enough to bring every
    measure under its low mark, so the prefix sent stays the same for many requests and the prompt cache holds.
    If trimming everything but the latest results is not enough, the oldest whole exchanges leave as well, again
    in one step. `messages` itself is never changed.
    """
    labels = labels or {}
    budget = Budget.for_profile(profile, overhead)
    protected = _protected_from(messages)
    originals: list[Size] = []
    cut_messages: list[dict[str, Any]] = []
    cut_sizes: list[Size] = []
    cut_drops: list[Dropped] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        key = (id(message), len(content) if isinstance(content, list | str) else 0, index < protected)
        entry = state.memo.get(key)
        if entry is None or entry[0] is not message:
            size = size_of(message)
            dropped_here = Dropped()
            cut = trimmed(message, labels, dropped_here) if index < protected else message
            entry = (message, size, cut, size if cut is message else size_of(cut), dropped_here)
            state.memo[key] = entry
        originals.append(entry[1])
        cut_messages.append(entry[2])
        cut_sizes.append(entry[3])
        cut_drops.append(entry[4])
    note = size_of(_without_exchanges(messages[:1], 1)[0]) - originals[0] if messages else Size()
    most_exchanges = _exchange_limit(messages, protected)

    def total(horizon: int, exchanges: int) -> Size:
        result = note if exchanges else Size()
        for index in range(len(messages)):
            if 1 <= index < 1 + 2 * exchanges:
                continue
            result = result + (cut_sizes[index] if index < horizon else originals[index])
        return result

    horizon = min(state.horizon, protected)
    exchanges = min(state.dropped_exchanges, most_exchanges)
    current = total(horizon, exchanges)
    dropped = Dropped()
    if not current.within(budget.high):
        dropped.reason = _reason(current, budget.high)
        new_horizon = next(
            (h for h in range(horizon + 1, protected + 1) if total(h, exchanges).within(budget.low)), protected
        )
        for index in range(max(horizon, 1 + 2 * exchanges), new_horizon):
            dropped.screenshots += cut_drops[index].screenshots
            dropped.page_texts += cut_drops[index].page_texts
        before, horizon = current, new_horizon
        current = total(horizon, exchanges)
        if not current.within(budget.hard):
            # Even with everything the agent moved past trimmed the request is too large: whole exchanges leave.
            first = exchanges
            while exchanges < most_exchanges and not current.within(budget.low):
                exchanges += 1
                current = total(horizon, exchanges)
            dropped.exchanges = exchanges - first
        dropped.tokens_saved = before.tokens - current.tokens
    sent = _without_exchanges(cut_messages[:horizon] + messages[horizon:], exchanges)
    return Prepared(
        messages=sent,
        state=replace(state, horizon=horizon, dropped_exchanges=exchanges),
        size=current,
        dropped=dropped,
    )


def _reason(size: Size, limit: Size) -> str:
    if size.images > limit.images:
        return "images"
    if size.bytes > limit.bytes:
        return "bytes"
    return "tokens"
