"""The live browser view: a CDP screencast of a run's active tab, streamed only while someone watches the run page.

The run page's live socket keeps a short-lived presence key in the shared cache; a small thread per run polls it
twice a second (one cache read) and starts or stops the screencast on the browser host's loop. Frames go to the
run's `live.<run>` group as they come, at most FRAMES_PER_SECOND, and one at a time: a frame that arrives while the
previous one is still being sent is dropped, never queued. Frames are pictures for people, not events: nothing is
stored.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer

from runs.live import is_watched, live_group

if TYPE_CHECKING:
    from playwright.async_api import CDPSession, Page

    from runtime.browser.host import BrowserHost
    from runtime.browser.toolset import PlaywrightBrowserToolset

log = logging.getLogger(__name__)

FRAMES_PER_SECOND = 5
POLL_SECONDS = 0.5
JPEG_QUALITY = 60
MAX_FRAME_WIDTH = 1280
MAX_FRAME_HEIGHT = 800
CURSOR_LOOKUP_TIMEOUT_SECONDS = 0.5


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
    ends. All Playwright calls run on the browser host's loop; the presence poll runs in its own daemon thread."""

    def __init__(self, host: BrowserHost, toolset: PlaywrightBrowserToolset, run_public_id: str) -> None:
        self.host = host
        self.toolset = toolset
        self.run_public_id = run_public_id
        self.group = live_group(run_public_id)
        self.cursor: dict[str, Any] | None = None
        self.frames_sent = 0
        self._cdp: CDPSession | None = None
        self._page: Page | None = None
        self._sending = False
        self._last_sent = 0.0
        self._stopped = threading.Event()
        self._layer = get_channel_layer()
        self._thread = threading.Thread(target=self._watch, name=f"live-view-{run_public_id}", daemon=True)
        self._thread.start()

    # --- presence, from the poll thread -------------------------------------------------------------------------

    def _watch(self) -> None:
        while not self._stopped.wait(POLL_SECONDS):
            try:
                wanted = is_watched(self.run_public_id)
                if not wanted and self._cdp is None:
                    continue  # nobody watches and nothing streams: this poll cost one cache read
                self.host.run(self._sync(wanted), timeout=10)
            except Exception:
                log.debug("live view of %s: poll failed", self.run_public_id, exc_info=True)

    async def _sync(self, wanted: bool) -> None:
        """Stream the active tab while wanted; follow the agent when it switches tabs."""
        if self._stopped.is_set():
            return
        page = self._active_page() if wanted else None
        if page is self._page and (page is None or self._cdp is not None):
            return
        await self._stop_screencast()
        if page is not None:
            await self._start_screencast(page)

    def _active_page(self) -> Page | None:
        active = self.toolset._active  # the driver has no public accessor for the active tab
        page = self.toolset._tabs.get(active) if active is not None else None
        return None if page is None or page.is_closed() else page

    # --- the screencast, on the host's loop -----------------------------------------------------------------------

    async def _start_screencast(self, page: Page) -> None:
        try:
            cdp = await page.context.new_cdp_session(page)
            cdp.on("Page.screencastFrame", lambda frame: asyncio.ensure_future(self._on_frame(cdp, frame)))
            await cdp.send(
                "Page.startScreencast",
                {"format": "jpeg", "quality": JPEG_QUALITY, "maxWidth": MAX_FRAME_WIDTH, "maxHeight": MAX_FRAME_HEIGHT},
            )
        except Exception:
            log.info("live view of %s: no screencast for this tab", self.run_public_id, exc_info=True)
            return
        self._cdp, self._page = cdp, page

    async def _stop_screencast(self) -> None:
        cdp, self._cdp, self._page = self._cdp, None, None
        if cdp is None:
            return
        try:
            await cdp.send("Page.stopScreencast")
            await cdp.detach()
        except Exception:
            log.debug("live view of %s: the tab or context was already gone", self.run_public_id)

    async def _on_frame(self, cdp: CDPSession, frame: dict[str, Any]) -> None:
        # Acknowledge every frame (Chromium sends the next one only then), but publish at most FRAMES_PER_SECOND and
        # only when the previous frame is out: a slow channel drops frames instead of queueing them.
        try:
            await cdp.send("Page.screencastFrameAck", {"sessionId": frame["sessionId"]})
        except Exception:
            return
        now = time.monotonic()
        if self._sending or now - self._last_sent < 1 / FRAMES_PER_SECOND or self._layer is None:
            return
        self._sending, self._last_sent = True, now
        metadata = frame.get("metadata") or {}
        message = {
            "type": "live.frame",
            "jpeg": frame["data"],
            "width": metadata.get("deviceWidth"),
            "height": metadata.get("deviceHeight"),
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
        if not ref:
            return None

        async def centre() -> tuple[float, float] | None:
            page = self._active_page()
            if page is None:
                return None
            box = await self.toolset._locator(page, ref).bounding_box(timeout=CURSOR_LOOKUP_TIMEOUT_SECONDS * 1000)
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
        try:
            self.host.run(self._stop_screencast(), timeout=5)
        except Exception:
            log.debug("live view of %s: screencast not stopped cleanly", self.run_public_id, exc_info=True)
        if self._layer is not None:

            async def ended() -> None:
                await self._layer.group_send(self.group, {"type": "live.ended"})

            try:
                self.host.run(ended(), timeout=5)
            except Exception:
                log.debug("live view of %s: viewers not told it ended", self.run_public_id, exc_info=True)
        self._thread.join(timeout=2)


def attach(host: BrowserHost, toolset: PlaywrightBrowserToolset, run_public_id: str) -> LiveView | None:
    """The run's live view, or None when it cannot run (it never costs the run itself)."""
    try:
        return LiveView(host, toolset, run_public_id)
    except Exception:
        log.warning("run %s: no live view", run_public_id, exc_info=True)
        return None
