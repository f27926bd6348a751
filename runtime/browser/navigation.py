"""Navigation detection from the browser's own events: whether an action caused a navigation or a popup, and waiting
for it to load, without fixed sleeps."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from playwright.async_api import (
    CDPSession,
    Frame,
    Page,
    Request,
)
from playwright.async_api import Error as PlaywrightError

log = logging.getLogger(__name__)

LOAD_GRACE_MS = 5_000


# An action's frame wait is bounded: a page whose frames never come (a hidden tab is throttled) must not hang the turn.
FRAME_WAIT_LIMIT_SECONDS = 1.0


# Waiting for a popup the page asked for (window.open, target=_blank) until its tab exists.
POPUP_ARRIVAL_LIMIT_SECONDS = 5.0


# Scroll the nearest scrollable ancestor of the element under the point, else the window, without animation.
SCROLL_AT_POINT = """({x, y, dx, dy}) => {
  let el = document.elementFromPoint(x, y);
  while (el && el !== document.body && el !== document.documentElement) {
    const style = getComputedStyle(el);
    const canY = dy && /(auto|scroll)/.test(style.overflowY) && el.scrollHeight > el.clientHeight;
    const canX = dx && /(auto|scroll)/.test(style.overflowX) && el.scrollWidth > el.clientWidth;
    if (canY || canX) { el.scrollBy({left: dx, top: dy, behavior: 'instant'}); return; }
    el = el.parentElement;
  }
  window.scrollBy({left: dx, top: dy, behavior: 'instant'});
}"""


# One animation frame, then the tasks queued before it (a form submission, a setTimeout(0) in a click handler).
ONE_FRAME = "new Promise(resolve => requestAnimationFrame(() => setTimeout(resolve, 0)))"


class NavigationWatch:
    """What one tab's main frame is doing, from the browser's own events: how many navigations were requested or
    started so far, and whether one is in flight (started, not yet committed, failed or finished).

    The renderer reports a navigation it is about to make (`Page.frameRequestedNavigation`) on a CDP session of our
    own, in order with that session's other messages; a frame waited for on the same session therefore answers
    after the report of any navigation the action's handlers asked for before that frame. Playwright's `request`
    and `framenavigated` events mark navigations the browser starts by itself (history, redirects) and their end.
    """

    def __init__(self, page: Page) -> None:
        self.page = page
        self.starts = 0
        self.popups_requested = 0
        self.in_flight = False
        self._request: Request | None = None
        self._changed = asyncio.Event()
        self._session: CDPSession | None = None
        self._attached = False
        self._main_frame_id: str | None = None
        page.on("request", self._on_request)
        page.on("requestfailed", self._on_request_ended)
        page.on("requestfinished", self._on_request_ended)
        page.on("framenavigated", self._on_navigated)

    async def attach(self) -> None:
        """Open the watch's CDP session (once); without one, frames are waited for through Playwright's own."""
        if self._attached or self.page.is_closed():
            return
        self._attached = True
        try:
            session = await self.page.context.new_cdp_session(self.page)
            session.on("Page.frameRequestedNavigation", self._on_requested)
            session.on("Page.windowOpen", self._on_window_open)
            tree = await session.send("Page.getFrameTree")
            await session.send("Page.enable")
        except PlaywrightError:
            log.info("no CDP session for a tab; navigations are seen from network events only", exc_info=True)
            return
        self._main_frame_id = tree["frameTree"]["frame"]["id"]
        self._session = session

    async def session(self) -> CDPSession | None:
        """The tab's own CDP session (opened once by attach), or None where the tab has none."""
        await self.attach()
        return self._session

    def _pulse(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _started(self) -> None:
        self.starts += 1
        self.in_flight = True
        self._pulse()

    def _on_requested(self, params: dict[str, Any]) -> None:
        if params.get("frameId") != self._main_frame_id:
            return
        if params.get("disposition", "currentTab") == "currentTab":
            self._started()

    def _on_window_open(self, params: dict[str, Any]) -> None:
        # target=_blank, window.open: the new tab is announced here before Playwright reports its page
        self.popups_requested += 1
        self._pulse()

    def _on_request(self, request: Request) -> None:
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            self._request = request
            self._started()

    def _on_request_ended(self, request: Request) -> None:
        # a navigation answered without a document (204, a download) or refused never commits
        if request is self._request:
            self._request = None
            self.in_flight = False
            self._pulse()

    def _on_navigated(self, frame: Frame) -> None:
        if frame == self.page.main_frame:
            self._request = None
            self.in_flight = False
            self._pulse()

    async def _until(self, condition: Callable[[], bool], timeout: float) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout
        while not condition():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        return True

    async def next_frame(self, since: int) -> None:
        """Until one animation frame (and the tasks queued before it) has passed in the page, or a navigation
        started after `since`; bounded, so a tab whose frames are throttled cannot hang the action."""
        await self.attach()
        if self._session is not None:
            frame = self._session.send("Runtime.evaluate", {"expression": ONE_FRAME, "awaitPromise": True})
        else:
            frame = self.page.evaluate(f"() => {ONE_FRAME}")
        frame_task = asyncio.ensure_future(frame)
        start_task = asyncio.ensure_future(self._until(lambda: self.starts > since, FRAME_WAIT_LIMIT_SECONDS))
        try:
            await asyncio.wait(
                {frame_task, start_task}, timeout=FRAME_WAIT_LIMIT_SECONDS, return_when="FIRST_COMPLETED"
            )
        finally:
            for task in (frame_task, start_task):
                task.cancel()
            # the frame fails when the document it ran in is replaced: that is a navigation, seen by the events
            await asyncio.gather(frame_task, start_task, return_exceptions=True)

    async def arrival(self) -> None:
        """A navigation in flight, waited for to commit (or fail), then to DOMContentLoaded."""
        await self._until(lambda: not self.in_flight, LOAD_GRACE_MS / 1000)
        with contextlib.suppress(PlaywrightError):
            await self.page.wait_for_load_state("domcontentloaded", timeout=LOAD_GRACE_MS)


async def settled(watch: NavigationWatch, action: Awaitable[Any]) -> None:
    """Run an action; if it caused a navigation or a popup, wait for it to reach DOMContentLoaded.

    "It caused none" is decided from events, not from a time window: no navigation requested or started and no popup
    asked for by the time the action's own promise and one animation frame (with the tasks queued before it) have
    passed. A navigation a page starts later by itself (a timer of its own, after a fetch) is not this action's;
    the next read waits for it if it is in flight by then (`PlaywrightBrowserToolset._page`).
    """
    page = watch.page
    popups: list[Page] = []

    def on_popup(popup: Page) -> None:
        popups.append(popup)

    page.context.on("page", on_popup)
    await watch.attach()  # before the action, so the renderer's reports of what it asks for reach us
    since, popups_since = watch.starts, watch.popups_requested
    try:
        await action
        if watch.starts == since:
            await watch.next_frame(since)
        if watch.popups_requested > popups_since and not popups:
            await watch._until(lambda: bool(popups), POPUP_ARRIVAL_LIMIT_SECONDS)
        if watch.starts > since or watch.in_flight:
            await watch.arrival()
        for popup in popups:
            with contextlib.suppress(PlaywrightError):
                await popup.wait_for_load_state("domcontentloaded", timeout=LOAD_GRACE_MS)
    finally:
        page.context.remove_listener("page", on_popup)
