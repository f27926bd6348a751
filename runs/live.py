"""Who is watching a run's live view: the run page's socket marks its presence in the shared cache, the worker's
screencast (runtime.browser.live_view) streams to the run's live group only while it is marked."""

from typing import Any

from django.core.cache import cache

PRESENCE_TTL_SECONDS = 6


def live_group(run_public_id: str) -> str:
    return f"live.{run_public_id}"


def presence_key(run_public_id: str) -> str:
    return f"live-viewers:{run_public_id}"


def mark_watched(run_public_id: str) -> None:
    """Called by the live socket while a viewer is connected (and refreshed well within the TTL)."""
    cache.set(presence_key(run_public_id), 1, timeout=PRESENCE_TTL_SECONDS)


async def amark_watched(run_public_id: str) -> None:
    await cache.aset(presence_key(run_public_id), 1, timeout=PRESENCE_TTL_SECONDS)


def watched_among(run_public_ids: list[str]) -> set[str]:
    """Which of these runs someone watches now, in one cache read (the worker's presence watcher)."""
    try:
        found = cache.get_many([presence_key(run_public_id) for run_public_id in run_public_ids])
    except Exception:
        return set()  # no cache, no viewer: the runs go on without a live view
    return {run_public_id for run_public_id in run_public_ids if found.get(presence_key(run_public_id))}


# --- a person's input while they have control (runs.human; applied by runtime.browser.control) -------------------

MOUSE_BUTTONS = ("left", "middle", "right")
MOUSE_ACTIONS = ("click", "down", "up", "move")
KEY_ACTIONS = ("press", "down", "up")
# Held with a key (a shortcut such as Ctrl+A, Shift+Tab), as CDP's modifiers bit field names them.
KEY_MODIFIERS = frozenset({"alt", "ctrl", "meta", "shift"})
COORDINATE_MAX = 10_000
WHEEL_DELTA_MAX = 10_000
TYPED_TEXT_MAX_CHARS = 1_000
KEY_NAME_MAX_CHARS = 32


def control_group(run_public_id: str) -> str:
    """The group the worker holding the run's browser listens on (runtime.browser.inbox): a person's input
    (`control.input`) and a new viewer's request for the current frame (`live.wanted`). Every message to it names
    the group, which is how the worker's one listener routes it."""
    return f"control.{run_public_id}"


def input_id(content: Any) -> int | None:
    """The number the page gave its input, echoed in the worker's acknowledgement (None if it gave none)."""
    value = content.get("id") if isinstance(content, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53 else None


def _number(value: Any, bound: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if -bound <= value <= bound else None


def control_input(content: Any) -> dict[str, Any] | None:
    """The input a live socket sent, cleaned to what the worker applies, or None if it is not one. Coordinates are
    CSS pixels of the page's viewport (the frames' width and height)."""
    if not isinstance(content, dict):
        return None
    kind = content.get("kind")
    if kind in ("mouse", "wheel"):
        x, y = _number(content.get("x"), COORDINATE_MAX), _number(content.get("y"), COORDINATE_MAX)
        if x is None or y is None or x < 0 or y < 0:
            return None
        if kind == "wheel":
            dx, dy = _number(content.get("dx", 0), WHEEL_DELTA_MAX), _number(content.get("dy", 0), WHEEL_DELTA_MAX)
            if dx is None or dy is None:
                return None
            return {"kind": "wheel", "x": x, "y": y, "dx": dx, "dy": dy}
        action = content.get("action", "click")
        button = content.get("button", "left")
        if action not in MOUSE_ACTIONS or button not in MOUSE_BUTTONS:
            return None
        return {"kind": "mouse", "action": action, "x": x, "y": y, "button": button}
    if kind == "key":
        key, action = content.get("key"), content.get("action", "press")
        if not isinstance(key, str) or not 0 < len(key) <= KEY_NAME_MAX_CHARS or action not in KEY_ACTIONS:
            return None
        modifiers = content.get("modifiers", [])
        if not isinstance(modifiers, list) or not set(modifiers) <= KEY_MODIFIERS:
            return None
        return {"kind": "key", "action": action, "key": key, "modifiers": sorted(set(modifiers))}
    if kind == "probe":
        return {"kind": "probe"}  # applies nothing: asks whether the person's control reaches the page
    if kind == "text":
        text = content.get("text")
        if not isinstance(text, str) or not 0 < len(text) <= TYPED_TEXT_MAX_CHARS:
            return None
        return {"kind": "text", "text": text}
    return None
