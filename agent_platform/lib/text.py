"""Text from the shapes the Messages API and our events carry, and text kept within a limit."""

import json
from collections.abc import Callable
from typing import Any

# The characters Python's str.strip() removes, as a regular expression's character class body: spelt out because \s
# means three different sets in Python, pydantic's Rust regex and ECMA-262 (the dialect an API document's patterns are
# read in), and every one of them reads this the same way.
WHITE_SPACE = r"\x09-\x0d\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def stripped_text_pattern(max_chars: int, forbidden: str = "") -> str:
    """The regular expression of exactly the strings that, stripped, hold 1 to `max_chars` characters, none of them
    in the class body `forbidden`: what a service that strips and then checks takes, for an API document."""
    edge = f"[^{WHITE_SPACE}{forbidden}]"
    inner = f"[^{forbidden}]" if forbidden else r"[\s\S]"
    return f"^[{WHITE_SPACE}]*{edge}(?:{inner}{{0,{max_chars - 2}}}{edge})?[{WHITE_SPACE}]*$"


TRUNCATED = "\n[… truncated]"
IMAGE_PLACEHOLDER = "[image]"


def content_text(
    content: Any,
    *,
    image: str | None = None,
    other: Callable[[Any], str] | None = None,
    skip_empty: bool = False,
) -> str:
    """The text of a message's or a tool result's content: a string, or a list of content blocks, nested or not.

    A block with `text` gives that text, and a tool_result block the text of its own content. An image block gives
    `image` (left out when None); anything else (tool_use, thinking, browser_state, compaction... or a value that is
    not content at all) gives `other(value)` (left out when None). The parts are joined by newlines, empty ones
    skipped with `skip_empty`. None is "".
    """
    text = _text(content, image, other, skip_empty)
    return "" if text is None else text


def _text(value: Any, image: str | None, other: Callable[[Any], str] | None, skip_empty: bool) -> str | None:
    """The text of one value, or None to leave it out of its list."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = (_text(item, image, other, skip_empty) for item in value)
        return "\n".join(part for part in parts if part is not None and (part or not skip_empty))
    if isinstance(value, dict):
        if value.get("type") == "image":
            return image
        if "text" in value:
            return _text(value["text"], image, other, skip_empty)
        if value.get("type") == "tool_result":
            return _text(value.get("content"), image, other, skip_empty)
    return other(value) if other is not None else None


def first_line(error: BaseException) -> str:
    """The first line of an error's message, or its class name when the message is empty."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def bounded(text: str, limit: int, *, marker_within_limit: bool = True) -> str:
    """`text`, or its start marked as truncated when it is longer than `limit`.

    With `marker_within_limit` the result is at most `limit` characters, the marker included; without it, `limit`
    characters of the text are kept and the marker follows them.
    """
    if len(text) <= limit:
        return text
    kept = max(limit - len(TRUNCATED), 0) if marker_within_limit else limit
    return text[:kept] + TRUNCATED


def json_text(value: Any) -> str:
    """Any value as JSON text for people to read: non-ASCII kept, and what JSON cannot hold written as str()."""
    return json.dumps(value, ensure_ascii=False, default=str)
