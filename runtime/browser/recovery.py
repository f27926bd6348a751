"""Noticing at once that a run's browser is gone (its tab's renderer crashed, or Chromium exited), so a step fails
the moment it happens, with its cause, instead of waiting out the step's timeout; the loop then recovers the run on a
fresh tab or a fresh browser (runtime.run_browser.RunBrowser.recover)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, TypeVar

from playwright.async_api import BrowserContext, Page

T = TypeVar("T")

# The causes a browser.restarted event names.
RENDERER_CRASH = "renderer_crash"  # the tab's renderer died: the context, its cookies and its other tabs survive
BROWSER_EXIT = "browser_exit"  # Chromium itself exited or was killed: every context on it is gone

CAUSE_TEXT = {
    RENDERER_CRASH: "The browser's tab crashed (its renderer process died).",
    BROWSER_EXIT: "The browser exited (its process ended or was killed).",
}


class BrowserLost(Exception):
    """The run's browser was lost while (or before) a step ran: `cause` says how, `url` is where its tab was."""

    def __init__(self, cause: str, url: str) -> None:
        super().__init__(CAUSE_TEXT[cause])
        self.cause = cause
        self.url = url


class LossWatch:
    """Watches one run's BrowserContext for a crashed tab or a closed context (Chromium exits: every context closes).

    Made and used on the browser host's loop. `race` runs a step unless the loss comes first; once lost, every
    further step fails at once until the loop recovers and takes a fresh watch.
    """

    def __init__(self, context: BrowserContext) -> None:
        self.cause: str | None = None
        self.url = ""
        self.crashed: Page | None = None  # the tab whose renderer died
        self.closing = False  # the run closes the context itself: that close is no loss
        self._lost = asyncio.Event()
        context.on("close", self._on_close)
        context.on("page", self.watch_page)
        for page in context.pages:
            self.watch_page(page)

    def watch_page(self, page: Page) -> None:
        page.on("crash", self._on_crash)

    def _on_crash(self, page: Page) -> None:
        self.crashed = self.crashed or page
        self._lose(RENDERER_CRASH, page.url)

    def _on_close(self, _context: BrowserContext) -> None:
        if not self.closing:
            self._lose(BROWSER_EXIT, "")

    def _lose(self, cause: str, url: str) -> None:
        # an exit outranks a crash: with the context gone, a fresh tab in it is no recovery
        if self.cause is None or cause == BROWSER_EXIT:
            self.cause = cause
        self.url = self.url or url
        self._lost.set()

    def forgive(self) -> None:
        """The crashed tab was replaced in the same context: watch on, as if nothing had been lost (on the loop)."""
        self.cause, self.url, self.crashed = None, "", None
        self._lost.clear()

    def lost(self) -> BrowserLost | None:
        """The loss seen so far, if any."""
        return BrowserLost(self.cause, self.url) if self.cause is not None else None

    async def race(self, step: Coroutine[Any, Any, T]) -> T:
        """`step`'s result, unless the browser is lost before it ends: then the step is cancelled and BrowserLost
        raised. A step that ended with the loss already seen (a crash fails the step and fires its event together)
        counts as lost too: what it returned was read from a dead tab."""
        if self._lost.is_set():
            step.close()
            raise BrowserLost(self.cause or BROWSER_EXIT, self.url)
        task = asyncio.ensure_future(step)
        lost = asyncio.ensure_future(self._lost.wait())
        try:
            await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if not self._lost.is_set():
            return task.result()
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: the loss is what the caller hears of
        raise BrowserLost(self.cause or BROWSER_EXIT, self.url)
