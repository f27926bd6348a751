"""The live browser view: a CDP screencast of a run's active tab, streamed only while someone watches the run page.

The run page's live socket keeps a short-lived presence key in the shared cache; one watcher thread per process
polls the keys of all its runs twice a second (one cache read for all of them) and starts or stops each run's
screencast on the browser host's loop. Frames go to the run's `live.<run>` group at most FRAMES_PER_SECOND, one at a
time, and the newest one always goes out: a frame that comes while the previous one is being sent, or too soon after
it, waits as the run's latest (replaced by a newer one, never queued) and is sent when the interval is over. A paused
page changes nothing, so the screencast sends nothing: a viewer who subscribes asks for the current frame (through the
process's inbox), and each input a person applies is followed by a fresh capture. Frames are pictures for people, not
events: nothing is stored.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from channels.layers import get_channel_layer

from runs.live import control_group, live_group, watched_among
from runtime.browser.inbox import inbox

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

    from runtime.browser.host import BrowserHost
    from runtime.browser.toolset import PlaywrightBrowserToolset

log = logging.getLogger(__name__)
T = TypeVar("T")


class PageLoop(Protocol):
    """The event loop a page's Playwright objects live on, and a way to run a coroutine there from another thread: a
    run's browser host, or a browser session's own loop (runtime.browser_sessions)."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T: ...


FRAMES_PER_SECOND = 5
POLL_SECONDS = 0.5
JPEG_QUALITY = 60
MAX_FRAME_WIDTH = 1280
MAX_FRAME_HEIGHT = 800
CURSOR_LOOKUP_TIMEOUT_SECONDS = 0.5
SYNC_TIMEOUT_SECONDS = 10.0
# A burst of input (typing) is followed by one capture once it pauses this long.
CAPTURE_AFTER_INPUT_SECONDS = 0.15


def action_point(member_input: Any) -> tuple[float, float] | None:
    """The viewport point an action names directly (coordinate targets), else None."""
    target = member_input.get("target") if isinstance(member_input, dict) else None
    if isinstance(target, dict) and target.get("type") == "coordinate":
        try:
            return float(target["x"]), float(target["y"])
        except (KeyError, TypeError, ValueError):
            return None
    coordinate = member_input.get("coordinate") if isinstance(member_input, dict) else None
    if isinstance(coordinate, list | tuple) and len(coordinate) == 2:
        try:
            return float(coordinate[0]), float(coordinate[1])
        except (TypeError, ValueError):
            return None
    return None


class LiveView:
    """One run's screencast: started while the run page is open somewhere, stopped when nobody watches or the run
    ends. All Playwright calls run on the browser host's loop; presence comes from the process's watcher, requests
    for a frame from the process's inbox. `key` names the run (its public id) in the presence key, the live group
    and the control group; nothing here reads a Run."""

    def __init__(
        self,
        host: BrowserHost | PageLoop,
        toolset: PlaywrightBrowserToolset | None,
        run_public_id: str,
        *,
        page_of: Callable[[], Page | None] | None = None,
    ) -> None:
        self.host = host
        self.toolset = toolset
        # what is shown when there is no agent's toolset (a browser session: the page its client used last)
        self.page_of = page_of
        self.run_public_id = run_public_id
        self.group = live_group(run_public_id)
        self.cursor: dict[str, Any] | None = None
        self.frames_sent = 0
        self._cdp: CDPSession | None = None
        self._page: Page | None = None
        self._sync_lock: asyncio.Lock | None = None
        # The newest frame Chromium gave (its message without the time it is sent), and whether it is still to send.
        self._latest: dict[str, Any] | None = None
        self._unsent = False
        self._sending = False
        self._last_sent = 0.0
        self._trailing: asyncio.TimerHandle | None = None
        self._capture: asyncio.TimerHandle | None = None
        self._publishing: asyncio.Future[None] | None = None
        self._capturing: asyncio.Future[None] | None = None
        self._stopped = threading.Event()
        self._layer = get_channel_layer()
        watcher.add(self)
        try:
            inbox.register(control_group(run_public_id), "live.wanted", self._wanted)
        except Exception:
            watcher.remove(self)
            raise

    # --- presence, from the process's watcher ---------------------------------------------------------------

    async def _sync(self, wanted: bool) -> None:
        """Stream the active tab while wanted; follow the agent when it switches tabs."""
        if self._sync_lock is None:
            self._sync_lock = asyncio.Lock()
        async with self._sync_lock:  # the watcher and a viewer's request may both start it
            if self._stopped.is_set():
                return
            page = self._active_page() if wanted else None
            if page is self._page and (page is None or self._cdp is not None):
                return
            await self._stop_screencast()
            if page is not None:
                await self._start_screencast(page)

    def _active_page(self) -> Page | None:
        if self.toolset is None:
            page = self.page_of() if self.page_of is not None else None
        else:
            active = self.toolset._active  # the driver has no public accessor for the active tab
            page = self.toolset._tabs.get(active) if active is not None else None
        return None if page is None or page.is_closed() else page

    # --- a viewer subscribed, or a person's input was applied: from the inbox's loop -------------------------

    def _wanted(self, message: dict[str, Any]) -> None:
        if not self._stopped.is_set():
            asyncio.run_coroutine_threadsafe(self._show_current(), self.host.loop)

    async def _show_current(self) -> None:
        """A viewer just subscribed: stream at once (not at the next poll), and send the current frame to every
        viewer, the newest Chromium gave or a capture when it gave none yet (a new screencast sends its own)."""
        if self._cdp is None:
            await self._sync(True)
            return
        if self._latest is not None:
            self._unsent = True
            self._publish_soon()
        else:
            await self._capture_now()

    def after_input(self) -> None:
        """From the inbox's loop, once a person's input was applied: a capture shortly after (one per burst), so the
        picture shows its effect even where the page changed nothing the screencast reports."""
        if not self._stopped.is_set():
            self.host.loop.call_soon_threadsafe(self._capture_soon)

    def _capture_soon(self) -> None:
        if self._capture is not None:
            self._capture.cancel()
        self._capture = self.host.loop.call_later(CAPTURE_AFTER_INPUT_SECONDS, self._capture_due)

    def _capture_due(self) -> None:
        self._capturing = asyncio.ensure_future(self._capture_now())

    async def _capture_now(self) -> None:
        self._capture = None
        cdp, page = self._cdp, self._page
        if cdp is None or page is None:
            return  # nobody watches
        try:
            shot = await cdp.send("Page.captureScreenshot", {"format": "jpeg", "quality": JPEG_QUALITY})
        except Exception:
            log.debug("live view of %s: no capture", self.run_public_id, exc_info=True)
            return
        size: dict[str, Any] = dict(page.viewport_size or {})
        if cdp is self._cdp:
            self._keep({"jpeg": shot["data"], "width": size.get("width"), "height": size.get("height")})

    # --- the screencast, on the host's loop -----------------------------------------------------------------------

    async def _start_screencast(self, page: Page) -> None:
        try:
            cdp = await page.context.new_cdp_session(page)
        except Exception:
            log.info("live view of %s: no screencast for this tab", self.run_public_id, exc_info=True)
            return
        cdp.on("Page.screencastFrame", lambda frame: asyncio.ensure_future(self._on_frame(cdp, frame)))
        self._cdp, self._page = cdp, page  # before the start: its first frame may come before the answer
        try:
            await cdp.send(
                "Page.startScreencast",
                {"format": "jpeg", "quality": JPEG_QUALITY, "maxWidth": MAX_FRAME_WIDTH, "maxHeight": MAX_FRAME_HEIGHT},
            )
        except Exception:
            log.info("live view of %s: no screencast for this tab", self.run_public_id, exc_info=True)
            await self._stop_screencast()

    async def _stop_screencast(self) -> None:
        cdp, self._cdp, self._page = self._cdp, None, None
        self._latest, self._unsent = None, False
        if cdp is None:
            return
        try:
            await cdp.send("Page.stopScreencast")
            await cdp.detach()
        except Exception:
            log.debug("live view of %s: the tab or context was already gone", self.run_public_id)

    async def _on_frame(self, cdp: CDPSession, frame: dict[str, Any]) -> None:
        # Acknowledge every frame (Chromium sends the next one only then); the newest is kept and sent in its turn.
        try:
            await cdp.send("Page.screencastFrameAck", {"sessionId": frame["sessionId"]})
        except Exception:
            return
        if cdp is not self._cdp:
            return  # a tab no longer streamed
        metadata = frame.get("metadata") or {}
        self._keep(
            {"jpeg": frame["data"], "width": metadata.get("deviceWidth"), "height": metadata.get("deviceHeight")}
        )

    def _keep(self, picture: dict[str, Any]) -> None:
        self._latest, self._unsent = picture, True
        self._publish_soon()

    def _publish_soon(self) -> None:
        """Send the newest frame now if the last one is out and the interval passed, else once it has."""
        if not self._unsent or self._layer is None:
            return
        wait = self._last_sent + 1 / FRAMES_PER_SECOND - time.monotonic()
        if self._sending or wait > 0:
            if self._trailing is None:
                self._trailing = asyncio.get_running_loop().call_later(max(wait, 0.02), self._trailing_due)
            return
        self._publishing = asyncio.ensure_future(self._publish())  # held: a task nobody holds may be collected

    def _trailing_due(self) -> None:
        self._trailing = None
        self._publish_soon()

    async def _publish(self) -> None:
        picture = self._latest
        if picture is None or self._stopped.is_set():
            return
        self._sending, self._unsent, self._last_sent = True, False, time.monotonic()
        message = {
            "type": "live.frame",
            **picture,
            "url": getattr(self._page, "url", "") if self._page is not None else "",
            "cursor": self.cursor,
            "sent_at": time.time(),
        }
        try:
            await self._layer.group_send(self.group, message)
            self.frames_sent += 1
        except Exception:
            log.debug("live view of %s: a frame was dropped", self.run_public_id, exc_info=True)
        finally:
            self._sending = False
        if self._unsent:
            self._publish_soon()

    # --- hooks the agent loop calls ---------------------------------------------------------------------------------

    def note_action(self, name: str, member_input: Any) -> None:
        """Before a browser action: remember where it points, for the cursor mark on the live picture. A ref target
        is looked up only while someone watches (one bounding-box query, bounded by a short timeout)."""
        point = action_point(member_input)
        if point is None and self._cdp is not None:
            point = self._ref_point(member_input)
        if point is not None:
            self.cursor = {"x": point[0], "y": point[1], "action": name}

    def _ref_point(self, member_input: Any) -> tuple[float, float] | None:
        target = member_input.get("target") if isinstance(member_input, dict) else None
        ref = target.get("ref") if isinstance(target, dict) else None
        toolset = self.toolset
        if not ref or toolset is None:
            return None

        async def centre() -> tuple[float, float] | None:
            page = self._active_page()
            if page is None:
                return None
            box = await toolset._locator(page, ref).bounding_box(timeout=CURSOR_LOOKUP_TIMEOUT_SECONDS * 1000)
            return (box["x"] + box["width"] / 2, box["y"] + box["height"] / 2) if box else None

        try:
            return self.host.run(centre(), timeout=CURSOR_LOOKUP_TIMEOUT_SECONDS * 2)
        except Exception:
            return None

    def follow(self, toolset: PlaywrightBrowserToolset) -> None:
        """The run's browser was restarted: stream the fresh toolset's active tab from the next poll on (the old tab's
        screencast is stopped then, as on a tab switch)."""
        self.toolset = toolset

    def stop(self) -> None:
        """The run is ending: stop polling and the screencast, and tell viewers the live picture is over."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        watcher.remove(self)
        try:
            inbox.unregister(control_group(self.run_public_id), "live.wanted")
        except Exception:
            log.debug("live view of %s: the inbox was not left cleanly", self.run_public_id, exc_info=True)

        async def quiet() -> None:
            for timer in (self._trailing, self._capture):
                if timer is not None:
                    timer.cancel()
            await self._stop_screencast()

        try:
            self.host.run(quiet(), timeout=5)
        except Exception:
            log.debug("live view of %s: screencast not stopped cleanly", self.run_public_id, exc_info=True)
        if self._layer is not None:

            async def ended() -> None:
                await self._layer.group_send(self.group, {"type": "live.ended"})

            try:
                self.host.run(ended(), timeout=5)
            except Exception:
                log.debug("live view of %s: viewers not told it ended", self.run_public_id, exc_info=True)


class PresenceWatcher:
    """The process's one presence poll: every POLL_SECONDS one cache read for all its live views, and each view whose
    viewers came or went is started or stopped on its host's loop (all at once, each bounded)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, LiveView] = {}
        self._pid: int | None = None

    def add(self, view: LiveView) -> None:
        with self._lock:
            if self._pid != os.getpid():  # a forked child polls for its own views
                self._views = {}
                threading.Thread(target=self._watch, name="live-view-watch", daemon=True).start()
                self._pid = os.getpid()
            self._views[view.run_public_id] = view

    def remove(self, view: LiveView) -> None:
        with self._lock:
            if self._views.get(view.run_public_id) is view:
                del self._views[view.run_public_id]

    def get(self, key: str) -> LiveView | None:
        with self._lock:
            return self._views.get(key)

    def _watch(self) -> None:
        while True:
            time.sleep(POLL_SECONDS)
            with self._lock:
                views = list(self._views.values())
            if not views:
                continue
            try:
                watched = watched_among([view.run_public_id for view in views])
                syncing = [
                    asyncio.run_coroutine_threadsafe(view._sync(view.run_public_id in watched), view.host.loop)
                    for view in views
                    if view.run_public_id in watched or view._cdp is not None
                ]
                concurrent.futures.wait(syncing, timeout=SYNC_TIMEOUT_SECONDS)
                for future in syncing:
                    if future.done() and not future.cancelled() and future.exception() is not None:
                        log.debug("live view: a poll failed", exc_info=future.exception())
            except Exception:
                log.debug("live view: poll failed", exc_info=True)


watcher = PresenceWatcher()


def input_applied(key: str) -> None:
    """A person's input reached the page of `key` (runtime.browser.control): its viewers get a fresh frame."""
    view = watcher.get(key)
    if view is not None:
        view.after_input()


def attach(host: BrowserHost, toolset: PlaywrightBrowserToolset, run_public_id: str) -> LiveView | None:
    """The run's live view, or None when it cannot run (it never costs the run itself)."""
    try:
        return LiveView(host, toolset, run_public_id)
    except Exception:
        log.warning("run %s: no live view", run_public_id, exc_info=True)
        return None


def attach_page(host: PageLoop, key: str, page_of: Callable[[], Page | None]) -> LiveView | None:
    """The live view of whatever page `page_of()` gives (called on the host's loop), keyed by `key` (a browser
    session's public id) as a run's is by its id; None when it cannot run."""
    try:
        return LiveView(host, None, key, page_of=page_of)
    except Exception:
        log.warning("%s: no live view", key, exc_info=True)
        return None
