"""A person's input to a run's browser while they have control: mouse, wheel, keys and typed text that the run
page's live socket sent (runs.consumers checks who and when: members of the run's workspace, while
`Run.accepts_control`), applied to the run's page through CDP Input events, and each one acknowledged.

Keyed by run id and independent of the agent loop: whoever owns a page in this worker's browser host (the agent
loop, or a run with no agent at all) attaches a dispatcher with a way to find the page. The process's one inbox
(runtime.browser.inbox) receives for every run; each input is applied on the host's loop. Nothing it receives is
stored or logged: typed text may be a password.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from runs.live import control_group, control_input
from runtime.browser import live_view
from runtime.browser.inbox import inbox

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

    from runtime.browser.host import BrowserHost
    from runtime.browser.live_view import PageLoop

log = logging.getLogger(__name__)

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
    the owner of the page says when a person may drive it (the agent loop while it waits for a person: a pause or
    its question, so a person's input never meets the agent's actions; a sign-in by hand throughout). Each input is
    answered to the socket that sent it (`control.ack`: applied, or why not) within APPLY_TIMEOUT_SECONDS.

    The process's one inbox (runtime.browser.inbox) receives for every run; this run's inputs are applied in order
    from a queue of its own on the inbox's loop, each on the browser host's loop, so a slow page holds up only its
    own run. `group` is what people send to (a run's control group unless said otherwise)."""

    def __init__(
        self,
        host: BrowserHost | PageLoop,
        run_public_id: str,
        page_of: Callable[[], Page | None],
        *,
        accepting: bool,
        group: str | None = None,
    ) -> None:
        self.host = host
        self.run_public_id = run_public_id
        self.group = group or control_group(run_public_id)
        self.page_of = page_of
        self.accepting = threading.Event()
        if accepting:
            self.accepting.set()
        self.applied = 0
        self._cdp: CDPSession | None = None
        self._cdp_page: Page | None = None
        self._stopped = False
        self._queue: asyncio.Queue[dict[str, Any]] = inbox.call(self._make_queue())
        self._drainer = inbox.spawn(self._drain())
        inbox.register(self.group, "control.input", self._queue.put_nowait)  # joined before the run can be paused

    @staticmethod
    async def _make_queue() -> asyncio.Queue[dict[str, Any]]:
        return asyncio.Queue()  # bound to the inbox's loop

    async def _drain(self) -> None:
        while True:
            message = await self._queue.get()
            if self._stopped:
                return
            await self._handle(message)

    async def _handle(self, message: dict[str, Any]) -> None:
        # Checked again here: the group is the worker's inbox, and only what the socket's check passes applies.
        cleaned = control_input(message.get("input"))
        if cleaned is None:
            reason = "invalid"
        elif not self.accepting.is_set():
            reason = "agent_acting"  # the agent's turn is not over yet: it finishes before a person drives
        else:
            reason = await self._applied(cleaned)
        reply_to = message.get("reply_to")
        if isinstance(reply_to, str) and reply_to:
            ack = {"type": "control.ack", "id": message.get("id"), "ok": reason == "", "reason": reason}
            try:
                await inbox.send(reply_to, ack)
            except Exception:
                log.debug("control of %s: an acknowledgement was not sent", self.run_public_id, exc_info=True)

    async def _applied(self, cleaned: dict[str, Any]) -> str:
        """Apply one input on the host's loop: "" once applied, else why not."""
        try:
            future = asyncio.run_coroutine_threadsafe(self._apply(cleaned), self.host.loop)
            applied = await asyncio.wait_for(asyncio.wrap_future(future), APPLY_TIMEOUT_SECONDS)
        except Exception as error:  # the input's content is never logged: only what kind failed
            log.info("control of %s: a %s input failed (%s)", self.run_public_id, cleaned["kind"], type(error).__name__)
            return "timeout" if isinstance(error, TimeoutError) else "failed"
        if not applied:
            return "no_page"
        self.applied += 1
        live_view.input_applied(self.run_public_id)
        return ""

    async def _session(self) -> CDPSession | None:
        page = self.page_of()
        if page is None or page.is_closed():
            return None
        if self._cdp is None or self._cdp_page is not page:
            self._cdp = await page.context.new_cdp_session(page)
            self._cdp_page = page
        return self._cdp

    async def _apply(self, event: dict[str, Any]) -> bool:
        """On the host's loop: False when the run has no page to take it."""
        cdp = await self._session()
        if cdp is None:
            return False
        kind = event["kind"]
        if kind == "probe":
            return True  # the page is there: the person's control reaches it
        if kind == "mouse":
            point = {"x": event["x"], "y": event["y"]}
            button = event["button"]
            if event["action"] == "move":
                await cdp.send("Input.dispatchMouseEvent", {"type": "mouseMoved", **point, "button": "none"})
                return True
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
        return True

    def stop(self) -> None:
        """Leave the run's group; inputs already queued are dropped unanswered (the page says none came back)."""
        if self._stopped:
            return
        self._stopped = True
        try:
            inbox.unregister(self.group, "control.input")
        except Exception:
            log.debug("control of %s: the group was not left cleanly", self.run_public_id, exc_info=True)
        self._drainer.cancel()
        cdp, self._cdp = self._cdp, None
        if cdp is not None:
            try:
                self.host.run(cdp.detach(), timeout=5)
            except Exception:
                log.debug("control of %s: the CDP session was already gone", self.run_public_id)


def attach(
    host: BrowserHost | PageLoop,
    run_public_id: str,
    page_of: Callable[[], Page | None],
    *,
    accepting: bool = False,
    group: str | None = None,
) -> InputDispatcher | None:
    """The run's input dispatcher, or None when it cannot run (it never costs the run itself)."""
    try:
        return InputDispatcher(host, run_public_id, page_of, accepting=accepting, group=group)
    except Exception:
        log.warning("run %s: no control of its browser", run_public_id, exc_info=True)
        return None
