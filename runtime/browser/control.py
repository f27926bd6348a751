"""A person's input to a run's browser while they have control: mouse, wheel, keys and typed text that the run
page's live socket sent (runs.consumers checks who and when: members of the run's workspace, while
`Run.accepts_control`), applied to the run's page through CDP Input events.

Keyed by run id and independent of the agent loop: whoever owns a page in this worker's browser host (the agent
loop, or a run with no agent at all) attaches a dispatcher with a way to find the page. It listens on the run's
control group in a thread of its own (its own event loop, so a blocking receive never holds the browser's loop) and
applies each input on the host's loop. Nothing it receives is stored or logged: typed text may be a password.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer

from runs.live import control_group, control_input

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

    from runtime.browser.host import BrowserHost

log = logging.getLogger(__name__)

RECEIVE_SECONDS = 1.0
APPLY_TIMEOUT_SECONDS = 5.0

# Keys that do something beyond inserting a character need their virtual key code (and Enter its text) for Chromium
# to act on them: submit a form, delete, move the caret.
SPECIAL_KEYS: dict[str, tuple[int, str]] = {
    "Enter": (13, "\r"),
    "Backspace": (8, ""),
    "Tab": (9, ""),
    "Escape": (27, ""),
    "Delete": (46, ""),
    "ArrowLeft": (37, ""),
    "ArrowUp": (38, ""),
    "ArrowRight": (39, ""),
    "ArrowDown": (40, ""),
    "Home": (36, ""),
    "End": (35, ""),
    "PageUp": (33, ""),
    "PageDown": (34, ""),
    " ": (32, " "),
}


# CDP's modifiers bit field (Input.dispatchKeyEvent).
MODIFIER_BITS = {"alt": 1, "ctrl": 2, "meta": 4, "shift": 8}
# CDP's `buttons` bit field of the button pressed.
BUTTON_BITS = {"left": 1, "right": 2, "middle": 4}


def key_event(key: str, modifiers: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """CDP Input.dispatchKeyEvent parameters of a key, without its type. A key held with Ctrl, Alt or Meta is a
    shortcut (Ctrl+A selects, it types no "a"): it carries no text."""
    event: dict[str, Any] = {"key": key, "modifiers": sum(MODIFIER_BITS[name] for name in modifiers)}
    if key in SPECIAL_KEYS:
        code, text = SPECIAL_KEYS[key]
        event |= {"windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code}
    elif len(key) == 1:
        code, text = ord(key.upper()), key
        event["windowsVirtualKeyCode"] = code
    else:
        text = ""
    if text and not {"alt", "ctrl", "meta"} & set(modifiers):
        event["text"] = text
    return event


class InputDispatcher:
    """Applies the inputs sent to one run's control group to the page `page_of()` gives, while `accepting` is set:
    the owner of the page says when a person may drive it (the agent loop only while it waits out a pause, so a
    person's input never meets the agent's actions; a sign-in by hand throughout). Input at other times is dropped."""

    def __init__(
        self, host: BrowserHost, run_public_id: str, page_of: Callable[[], Page | None], *, accepting: bool
    ) -> None:
        self.host = host
        self.run_public_id = run_public_id
        self.page_of = page_of
        self.accepting = threading.Event()
        if accepting:
            self.accepting.set()
        self._cdp: CDPSession | None = None
        self._cdp_page: Page | None = None
        self._stopped = threading.Event()
        self._ready = threading.Event()
        self._layer = get_channel_layer()
        self._thread = threading.Thread(target=self._serve, name=f"control-{run_public_id}", daemon=True)
        self._thread.start()
        self._ready.wait(timeout=5)  # joined the group before the run can be paused

    def _serve(self) -> None:
        try:
            asyncio.run(self._listen())
        except Exception:
            log.warning("control of %s: the listener stopped", self.run_public_id, exc_info=True)
        finally:
            self._ready.set()

    async def _listen(self) -> None:
        layer = self._layer
        if layer is None:
            return
        channel = await layer.new_channel()
        group = control_group(self.run_public_id)
        await layer.group_add(group, channel)
        self._ready.set()
        try:
            while not self._stopped.is_set():
                try:
                    message = await asyncio.wait_for(layer.receive(channel), RECEIVE_SECONDS)
                except TimeoutError:
                    continue
                # Checked again here: the group is the worker's inbox, and only what the socket's check passes applies.
                cleaned = control_input(message.get("input")) if message.get("type") == "control.input" else None
                if cleaned is None or not self.accepting.is_set():
                    continue
                try:
                    await asyncio.to_thread(self.host.run, self._apply(cleaned), APPLY_TIMEOUT_SECONDS)
                except Exception as error:  # the input's content is never logged: only what kind failed
                    log.info(
                        "control of %s: a %s input failed (%s)",
                        self.run_public_id,
                        cleaned["kind"],
                        type(error).__name__,
                    )
        finally:
            await layer.group_discard(group, channel)

    async def _session(self) -> CDPSession | None:
        page = self.page_of()
        if page is None:
            return None
        if self._cdp is None or self._cdp_page is not page:
            self._cdp = await page.context.new_cdp_session(page)
            self._cdp_page = page
        return self._cdp

    async def _apply(self, event: dict[str, Any]) -> None:
        cdp = await self._session()
        if cdp is None:
            return
        kind = event["kind"]
        if kind == "mouse":
            point = {"x": event["x"], "y": event["y"]}
            button = event["button"]
            if event["action"] == "move":
                await cdp.send("Input.dispatchMouseEvent", {"type": "mouseMoved", **point, "button": "none"})
                return
            if event["action"] in ("click", "down"):
                await cdp.send(
                    "Input.dispatchMouseEvent",
                    {
                        "type": "mousePressed",
                        **point,
                        "button": button,
                        "buttons": BUTTON_BITS[button],
                        "clickCount": 1,
                    },
                )
            if event["action"] in ("click", "up"):
                await cdp.send(
                    "Input.dispatchMouseEvent", {"type": "mouseReleased", **point, "button": button, "clickCount": 1}
                )
        elif kind == "wheel":
            await cdp.send(
                "Input.dispatchMouseEvent",
                {"type": "mouseWheel", "x": event["x"], "y": event["y"], "deltaX": event["dx"], "deltaY": event["dy"]},
            )
        elif kind == "key":
            params = key_event(event["key"], event.get("modifiers", ()))
            if event["action"] in ("press", "down"):
                await cdp.send(
                    "Input.dispatchKeyEvent", {"type": "keyDown" if "text" in params else "rawKeyDown", **params}
                )
            if event["action"] in ("press", "up"):
                released = {name: value for name, value in params.items() if name != "text"}
                await cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", **released})
        elif kind == "text":
            await cdp.send("Input.insertText", {"text": event["text"]})

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=RECEIVE_SECONDS + 2)
        cdp, self._cdp = self._cdp, None
        if cdp is not None:
            try:
                self.host.run(cdp.detach(), timeout=5)
            except Exception:
                log.debug("control of %s: the CDP session was already gone", self.run_public_id)


def attach(
    host: BrowserHost, run_public_id: str, page_of: Callable[[], Page | None], *, accepting: bool = False
) -> InputDispatcher | None:
    """The run's input dispatcher, or None when it cannot run (it never costs the run itself)."""
    try:
        return InputDispatcher(host, run_public_id, page_of, accepting=accepting)
    except Exception:
        log.warning("run %s: no control of its browser", run_public_id, exc_info=True)
        return None
