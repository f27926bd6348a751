"""The worker's browser host: one shared Chromium per worker process on its own event-loop thread, and a
BrowserContext per run behind its own egress proxy."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from playwright.async_api import (
    Browser,
    BrowserContext,
    Playwright,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError

from agent_platform import metrics
from runtime.browser import reaper as browser_reaper
from runtime.browser.egress_proxy import EgressProxy
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.upstream import UpstreamDialer

log = logging.getLogger(__name__)

T = TypeVar("T")


CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # A frame of another site gets a renderer of its own. The full browser isolates sites by default; its headless
    # shell, which the settings prefer for its memory, does not unless told (tests/browser/test_isolation.py).
    "--site-per-process",
    # Chromium's own calls home (autofill field types) would go through the egress proxy and be refused as noise
    "--disable-features=AutofillServerCommunication",
)


DEFAULT_VIEWPORT = (1280, 800)


class BrowserHost:
    """One Chromium per worker process, driven from a private asyncio loop in a daemon thread.

    Synchronous code (a Celery task thread) submits coroutines with `host.run(coro, timeout=...)`; every Playwright
    object (contexts, pages, toolsets) lives on that loop, so everything touching them must go through `run`.
    Chromium starts on the first `new_context` and is relaunched there when it crashed or disconnected.
    """

    def __init__(
        self,
        executable_path: str | None = "/usr/bin/chromium",
        *,
        args: tuple[str, ...] = CHROMIUM_ARGS,
        headless: bool = True,
        pid_dir: Path | None = None,
    ) -> None:
        self.executable_path = executable_path
        self.pid_dir = pid_dir  # where this process records its browsers for a successor to clean up (browser_reaper)
        self.args = args
        self.headless = headless
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._launch_lock: asyncio.Lock | None = None
        self._closed = False
        self.launch_count = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="browser-host", daemon=True)
        self._thread.start()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coro` on the host's loop and return its result; on timeout the coroutine is cancelled."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("BrowserHost.run was called from the host's own loop; await the coroutine instead")
        if self._closed:
            coro.close()
            raise RuntimeError("this BrowserHost is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    @property
    def is_connected(self) -> bool:
        return self._browser is not None and self._browser.is_connected()

    async def _ensure_browser(self) -> Browser:
        if self._launch_lock is None:
            self._launch_lock = asyncio.Lock()
        async with self._launch_lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._browser is not None:
                log.warning("Chromium disconnected; relaunching")
                self._browser = None
            try:
                return await self._launch()
            except PlaywrightError:
                # the Playwright driver itself may have died with the browser: start it afresh once
                log.warning("Chromium launch failed; restarting Playwright and retrying", exc_info=True)
                await self._stop_playwright()
                return await self._launch()

    async def _launch(self) -> Browser:
        if self._playwright is None:
            # the egress proxy must see loopback connections too: never let the driver exempt them
            os.environ.pop("PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK", None)
            self._playwright = await async_playwright().start()
        browser = await self._playwright.chromium.launch(
            executable_path=self.executable_path, headless=self.headless, args=list(self.args)
        )
        browser.on("disconnected", self._on_disconnected)
        self._browser = browser
        self.launch_count += 1
        if self.pid_dir is not None:
            browser_reaper.record(self.pid_dir)
        return browser

    def _on_disconnected(self, browser: Browser) -> None:
        if self._browser is browser:
            self._browser = None

    async def start(self) -> None:
        """Launch Chromium now rather than on the first run's context (a warm worker does this at start)."""
        if self._closed:
            raise RuntimeError("this BrowserHost is closed")
        await self._ensure_browser()

    async def new_context(
        self,
        storage_state: dict[str, Any] | None = None,
        viewport: tuple[int, int] = DEFAULT_VIEWPORT,
        network_guard: NetworkGuard | None = None,
        accept_downloads: bool = False,
        upstream: UpstreamDialer | None = None,
    ) -> BrowserContext:
        """A fresh BrowserContext (one per run) on the shared Chromium, optionally carrying a saved storage state.

        With a `network_guard`, every connection of the context goes through an egress proxy of its own that enforces
        the guard on the address it connects to; the proxy closes with the context. With an `upstream` too, that
        proxy forwards each allowed connection through the run's own upstream proxy.
        """
        if upstream is not None and network_guard is None:
            raise ValueError("an upstream proxy is used only behind the egress guard")
        if self._closed:
            raise RuntimeError("this BrowserHost is closed")
        browser = await self._ensure_browser()
        width, height = viewport
        proxy = None
        if network_guard is not None:
            proxy = await EgressProxy(network_guard, upstream=upstream).start()
        try:
            context = await browser.new_context(
                # Playwright sends loopback through a context's proxy too (Chromium's `<-loopback>` bypass rule) unless
                # PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK is set: so no bypass list here, ever.
                proxy={"server": proxy.url} if proxy is not None else None,
                storage_state=storage_state,  # type: ignore[arg-type]
                viewport={"width": width, "height": height},
                device_scale_factor=1,
                # a service worker's requests bypass context.route, so the network guard could not see them
                service_workers="block",
                # a run keeps its downloads (runtime.browser.downloads); every byte still comes through the proxy
                accept_downloads=accept_downloads,
            )
        except BaseException:
            if proxy is not None:
                await proxy.close()
            raise
        metrics.browser_contexts_open.inc()
        context.on("close", lambda _context: metrics.browser_contexts_open.dec())
        if proxy is not None:
            context.on("close", lambda _context: asyncio.ensure_future(proxy.close()))
        return context

    async def _stop_playwright(self) -> None:
        browser, self._browser = self._browser, None
        if browser is not None:
            try:
                await browser.close()
            except PlaywrightError:
                pass
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            try:
                await playwright.stop()
            except Exception:
                log.warning("Playwright did not stop cleanly", exc_info=True)

    def close(self, timeout: float = 30.0) -> None:
        """Close Chromium and the Playwright driver, then stop the loop thread. Idempotent."""
        if self._closed:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._stop_playwright(), self._loop).result(timeout)
            if self.pid_dir is not None:
                browser_reaper.forget(self.pid_dir)
        finally:
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
            if not self._thread.is_alive():
                self._loop.close()
