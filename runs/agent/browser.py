"""The Playwright driver of the SDK's browser toolset: one shared Chromium per worker, one BrowserContext per run."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import hashlib
import inspect
import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from agent_platform.netpolicy import BlockedRequest, normalize_url
from anthropic.tools import ToolError
from anthropic.tools.browser import (
    BetaAsyncAbstractBrowserToolset20260801,
    BetaBrowserNavigateResult,
    BetaBrowserState,
    BetaConfirmContext,
    BetaDialogDismissed,
    BetaNavigationRefused,
    BetaScreenshotResult,
    BetaToolsetCallContext,
    TabMissingError,
)
from anthropic.types.beta import (
    BetaBrowserCloseTabInput,
    BetaBrowserDoubleClickInput,
    BetaBrowserFindInput,
    BetaBrowserFormInputInput,
    BetaBrowserGetPageTextInput,
    BetaBrowserHoverInput,
    BetaBrowserJavascriptExecInput,
    BetaBrowserKeyInput,
    BetaBrowserLeftClickInput,
    BetaBrowserListTabsInput,
    BetaBrowserNavigateInput,
    BetaBrowserNewTabInput,
    BetaBrowserReadPageInput,
    BetaBrowserRightClickInput,
    BetaBrowserScreenshotInput,
    BetaBrowserScrollInput,
    BetaBrowserScrollToInput,
    BetaBrowserStateTabEntryParam,
    BetaBrowserSwitchTabInput,
    BetaBrowserTripleClickInput,
    BetaBrowserTypeInput,
    BetaBrowserWaitInput,
)
from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Dialog,
    Frame,
    Locator,
    Page,
    Playwright,
    Request,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from runtime.browser import reaper as browser_reaper
from runtime.browser.egress_proxy import REFUSED_HEADER, EgressProxy
from runtime.browser.network_guard import NetworkGuard

from agent_platform.lib.text import bounded, first_line
from runs.secrets import UnknownSecret, substitute

log = logging.getLogger(__name__)

T = TypeVar("T")

CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # Chromium's own calls home (autofill field types) would go through the egress proxy and be refused as noise
    "--disable-features=AutofillServerCommunication",
)
DEFAULT_VIEWPORT = (1280, 800)
READ_PAGE_MAX_CHARS = 50_000  # the tool's documented cap
PAGE_TEXT_MAX_CHARS = 50_000
FINAL_VIEW_TEXT_MAX_CHARS = 20_000
FIND_MAX_MATCHES = 20
ACTION_TIMEOUT_MS = 10_000
NAVIGATION_TIMEOUT_MS = 30_000
LOAD_GRACE_MS = 5_000
# An action's frame wait is bounded: a page whose frames never come (a hidden tab is throttled) must not hang the turn.
FRAME_WAIT_LIMIT_SECONDS = 1.0
# Waiting for a popup the page asked for (window.open, target=_blank) until its tab exists.
POPUP_ARRIVAL_LIMIT_SECONDS = 5.0
SCROLL_PIXELS_PER_NOTCH = 100
MAX_WAIT_SECONDS = 30.0

# Roles an agent acts on; read_page(filter="interactive") keeps the lines with these (and their ancestors' nothing).
INTERACTIVE_ROLES = frozenset(
    {
        "button",
        "checkbox",
        "combobox",
        "link",
        "listbox",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
        "radio",
        "searchbox",
        "slider",
        "spinbutton",
        "switch",
        "tab",
        "textbox",
        "treeitem",
    }
)
REF_IN_LINE = re.compile(r"\[ref=([a-z0-9]+)\]")
REF_MARK = re.compile(r" ?\[ref=[a-z0-9]+\]")
# read_page's default depth; a snapshot taken for the fingerprint uses it too, so the two hash alike.
READ_PAGE_DEFAULT_DEPTH = 15

ROLE_OF_LINE = re.compile(r"^\s*- ([a-z]+)")

# xdotool-style names the model uses, mapped to Playwright's key names.
KEY_ALIASES = {
    "return": "Enter",
    "enter": "Enter",
    "backspace": "Backspace",
    "tab": "Tab",
    "escape": "Escape",
    "esc": "Escape",
    "space": "Space",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "page_up": "PageUp",
    "pageup": "PageUp",
    "prior": "PageUp",
    "page_down": "PageDown",
    "pagedown": "PageDown",
    "next": "PageDown",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "ctrl": "Control",
    "control": "Control",
    "control_l": "Control",
    "shift": "Shift",
    "shift_l": "Shift",
    "alt": "Alt",
    "alt_l": "Alt",
    "option": "Alt",
    "cmd": "Meta",
    "command": "Meta",
    "meta": "Meta",
    "super": "Meta",
    "win": "Meta",
}
KEY_ALIASES.update({f"f{n}": f"F{n}" for n in range(1, 13)})
MODIFIER_KEYS = frozenset({"Control", "Shift", "Alt", "Meta"})


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
    ) -> BrowserContext:
        """A fresh BrowserContext (one per run) on the shared Chromium, optionally carrying a saved storage state.

        With a `network_guard`, every connection of the context goes through an egress proxy of its own that enforces
        the guard on the address it connects to; the proxy closes with the context.
        """
        if self._closed:
            raise RuntimeError("this BrowserHost is closed")
        browser = await self._ensure_browser()
        width, height = viewport
        proxy = None
        if network_guard is not None:
            proxy = await EgressProxy(network_guard).start()
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
                accept_downloads=False,
            )
        except BaseException:
            if proxy is not None:
                await proxy.close()
            raise
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


async def approve(context: BetaConfirmContext) -> bool:
    """The confirm callable used when JavaScript is enabled: the operator enabled it for the whole run."""
    return True


class PlaywrightBrowserToolset(BetaAsyncAbstractBrowserToolset20260801):
    """The browser toolset of one run, driving the pages of one BrowserContext.

    Tabs get stable ids (`tab_1`, `tab_2`, …). Element references are Playwright's aria refs (`e12`) as `read_page`
    and `find` print them; `ref_e12`, `ref=e12` and `[ref=e12]` are accepted too. Native dialogs are dismissed and
    reported. Members not implemented here are reported disabled by the SDK.
    """

    def __init__(
        self,
        *,
        context: BrowserContext,
        on_screenshot: Callable[[bytes], Awaitable[str] | str] | None = None,
        network_guard: NetworkGuard | None = None,
        allow_javascript: bool = False,
        secrets: dict[str, str] | None = None,
    ) -> None:
        configs: dict[str, Any] = {"javascript_exec": {"enabled": bool(allow_javascript)}}
        kwargs: dict[str, Any] = {"configs": configs}
        if network_guard is not None:
            # the SDK asks it before each of the model's navigations
            kwargs["url_policy"] = network_guard.url_policy
        if allow_javascript:
            kwargs["confirm"] = approve
        super().__init__(**kwargs)
        self.context = context
        self.on_screenshot = on_screenshot
        self.network_guard = network_guard
        self.secrets = dict(secrets or {})
        self.last_screenshot_url: str | None = None
        self._tabs: dict[str, Page] = {}
        self._watches: dict[Page, NavigationWatch] = {}
        self._snapshot: tuple[Page, str, str] | None = None  # (tab, url, aria snapshot) of the turn's last read
        self._next_tab = 1
        self._active: str | None = None
        self._changes: list[Any] = []
        self._navigating = False
        self._guard_installed = False
        self._containments: set[asyncio.Future[None]] = set()
        context.on("page", self._on_page)
        for page in context.pages:
            self._register(page, opened=False)

    # --- lifecycle and runtime hooks ------------------------------------------------------------

    async def install_guard(self) -> None:
        """Install the network guard on the context (done by `open`; call it first if you navigate otherwise)."""
        if self.network_guard is not None and not self._guard_installed:
            self._guard_installed = True
            await self.network_guard.install(self.context, on_block=self._on_blocked)

    async def open(self, url: str) -> BetaBrowserNavigateResult:
        """Navigate the first tab (created if needed) to the run's start URL. The network guard applies; the
        `url_policy` does not (it is for the model's navigations) but the guard refuses the same URLs."""
        await self.install_guard()
        if self.network_guard is not None:
            refusal = await self.network_guard.url_refusal(normalize_url(url))
            if refusal is not None:
                raise ToolError(f"Navigation refused by the network policy: {refusal}.")
        page = await self._page(None)
        return await self._goto(page, url)

    @property
    def last_snapshot(self) -> str | None:
        """The accessibility snapshot the last read_page or find took of the active tab, while no other member has
        touched a tab since (every member goes through `_page`, which forgets it); None otherwise."""
        if self._snapshot is None:
            return None
        page, url, snapshot = self._snapshot
        active = self._tabs.get(self._active) if self._active else None
        return snapshot if page is active and page.url == url and not page.is_closed() else None

    def _remember(self, page: Page, snapshot: str) -> None:
        self._snapshot = (page, page.url, snapshot)

    async def page_fingerprint(self) -> str:
        """A short hash of the active tab's URL and accessibility tree, to detect a page that stopped changing.

        It reuses the turn's last read_page/find snapshot when there is one (a second snapshot would cost as much
        as the read), and leaves the `[ref=…]` marks out: Playwright numbers them anew on every document, so a
        reload of an unchanged page would otherwise look changed.
        """
        snapshot = self.last_snapshot
        page = await self._page(None, member=False)
        if snapshot is None:
            try:
                # mode="ai" and read_page's default depth, so it hashes like the snapshot a read_page leaves
                snapshot = await page.aria_snapshot(mode="ai", depth=READ_PAGE_DEFAULT_DEPTH, timeout=ACTION_TIMEOUT_MS)
            except PlaywrightError:
                snapshot = ""
        return fingerprint_of(page.url, snapshot)

    async def final_view(self) -> dict[str, Any]:
        """What the judge reads: url, title, text (bounded) and a viewport PNG of the active tab."""
        page = await self._page(None, member=False)
        text = await self._page_text(page, FINAL_VIEW_TEXT_MAX_CHARS)
        return {
            "url": page.url,
            "title": await self._title(page),
            "text": text,
            "screenshot_png": await page.screenshot(type="png", timeout=ACTION_TIMEOUT_MS),
        }

    async def viewport_image(self, jpeg_quality: int = 0) -> tuple[bytes, str]:
        """A viewport image of the active tab for people watching (the live view) and its file extension: a JPEG
        at `jpeg_quality` (smaller, and quicker to encode than a PNG), or a PNG when it is 0."""
        page = await self._page(None, member=False)
        if jpeg_quality:
            return await page.screenshot(type="jpeg", quality=jpeg_quality, timeout=ACTION_TIMEOUT_MS), "jpg"
        return await page.screenshot(type="png", timeout=ACTION_TIMEOUT_MS), "png"

    async def storage_state(self) -> dict[str, Any]:
        """Cookies and localStorage of the context, for a follow-up run to continue from."""
        return dict(await self.context.storage_state())

    async def close(self) -> None:
        await super().close()
        try:
            await self.context.close()
        except PlaywrightError:
            pass  # the browser is already gone

    # --- tabs -------------------------------------------------------------------------------------

    def _on_page(self, page: Page) -> None:
        self._register(page)

    def _register(self, page: Page, opened: bool = True) -> str:
        for tab_id, known in self._tabs.items():
            if known is page:
                return tab_id
        tab_id = f"tab_{self._next_tab}"
        self._next_tab += 1
        self._tabs[tab_id] = page
        page.set_default_timeout(ACTION_TIMEOUT_MS)
        page.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
        page.on("dialog", self._on_dialog)
        page.on("close", lambda closed: self._forget(closed))
        # from the tab's first moment, so a navigation it starts is known to whatever reads it next
        self._watches[page] = NavigationWatch(page)
        # a tab the page opened (target=_blank, window.open) comes to the front, as in a desktop browser
        self._active = tab_id
        if opened:
            self._changes.append({"type": "tab_opened", "tab_id": tab_id})
        return tab_id

    def _forget(self, page: Page) -> None:
        self._watches.pop(page, None)
        for tab_id, known in list(self._tabs.items()):
            if known is page:
                del self._tabs[tab_id]
                if self._active == tab_id:
                    self._active = next(reversed(self._tabs), None)

    async def _page(self, tab_id: str | None, *, member: bool = True) -> Page:
        """The tab a member acts on (the active one by default), once a navigation in flight in it has arrived."""
        if member:
            self._snapshot = None  # the member may change the page; read_page and find remember theirs afterwards
        await self._contain()
        if tab_id:
            page = self._tabs.get(tab_id)
            if page is None or page.is_closed():
                raise TabMissingError()
        elif self._active is not None and not self._tabs[self._active].is_closed():
            page = self._tabs[self._active]
        else:
            page = await self.context.new_page()
            self._register(page, opened=False)
        watch = self._watches.get(page)
        if watch is not None and watch.in_flight:
            await watch.arrival()
        return page

    def _watch(self, page: Page) -> NavigationWatch:
        watch = self._watches.get(page)
        if watch is None:
            watch = self._watches[page] = NavigationWatch(page)
        return watch

    async def _on_dialog(self, dialog: Dialog) -> None:
        self._changes.append(BetaDialogDismissed(kind=dialog.type, message=dialog.message))
        try:
            # refusing a beforeunload would pin the tab to the page; every other dialog is declined
            if dialog.type == "beforeunload":
                await dialog.accept()
            else:
                await dialog.dismiss()
        except PlaywrightError:
            pass

    def _on_blocked(self, blocked: BlockedRequest) -> None:
        if not blocked.is_navigation:
            return
        if blocked.redirected and blocked.request is not None:
            # the internal page is loading already: leave it before the agent can read it
            page = blocked.request.frame.page
            self._containments.add(asyncio.ensure_future(leave_page(page)))
        if not self._navigating:
            self._changes.append(BetaNavigationRefused())

    async def _contain(self) -> None:
        """Finish the redirect checks and the page exits they started, so reads and reports come after them."""
        if self.network_guard is not None:
            await self.network_guard.settle()
        while self._containments:
            await asyncio.gather(*self._containments, return_exceptions=True)
            self._containments = {task for task in self._containments if not task.done()}

    async def _title(self, page: Page) -> str:
        try:
            return await page.title()
        except PlaywrightError:
            return ""  # mid-navigation

    async def _entry(self, tab_id: str) -> BetaBrowserStateTabEntryParam:
        page = self._tabs[tab_id]
        return {"tab_id": tab_id, "title": await self._title(page), "url": page.url, "active": tab_id == self._active}

    async def _browser_state(self, context: BetaToolsetCallContext) -> BetaBrowserState:
        await self._contain()
        tabs = [await self._entry(tab_id) for tab_id in list(self._tabs)]
        changes, self._changes = self._changes, []
        return BetaBrowserState(tabs=tabs, state_changes=changes)

    async def list_tabs(
        self, context: BetaToolsetCallContext, input: BetaBrowserListTabsInput
    ) -> list[BetaBrowserStateTabEntryParam]:
        return [await self._entry(tab_id) for tab_id in list(self._tabs)]

    async def new_tab(
        self, context: BetaToolsetCallContext, input: BetaBrowserNewTabInput
    ) -> BetaBrowserStateTabEntryParam:
        page = await self.context.new_page()
        tab_id = self._register(page)
        self._active = tab_id
        return await self._entry(tab_id)

    async def switch_tab(
        self, context: BetaToolsetCallContext, input: BetaBrowserSwitchTabInput
    ) -> BetaBrowserStateTabEntryParam:
        page = await self._page(input.tab_id)
        self._active = input.tab_id
        await page.bring_to_front()
        return await self._entry(input.tab_id)

    async def close_tab(self, context: BetaToolsetCallContext, input: BetaBrowserCloseTabInput) -> None:
        page = await self._page(input.tab_id)
        await page.close()
        self._forget(page)

    # --- navigation and reading -----------------------------------------------------------------

    async def navigate(
        self, context: BetaToolsetCallContext, input: BetaBrowserNavigateInput
    ) -> BetaBrowserNavigateResult:
        await self.install_guard()
        page = await self._page(input.tab_id)
        word = input.url.strip().lower()
        if word in ("back", "forward", "reload"):
            self._navigating = True
            try:
                if word == "back":
                    response = await page.go_back(wait_until="domcontentloaded")
                elif word == "forward":
                    response = await page.go_forward(wait_until="domcontentloaded")
                else:
                    response = await page.reload(wait_until="domcontentloaded")
            finally:
                self._navigating = False
            if response is None and word != "reload":
                raise ToolError(f"There is no page to go {word} to.")
            return BetaBrowserNavigateResult(
                url=page.url, title=await self._title(page), status=response.status if response else None
            )
        return await self._goto(page, input.url)

    async def _goto(self, page: Page, url: str) -> BetaBrowserNavigateResult:
        target = normalize_url(url)
        self._navigating = True
        refusals_before = self.network_guard.refusal_count if self.network_guard else 0
        try:
            response = await page.goto(target, wait_until="domcontentloaded")
        except PlaywrightError as exc:
            refusal = None
            if self.network_guard is not None:
                await self._contain()
                refusal = self.network_guard.last_refusal_for(target) or self.network_guard.navigation_refusal_since(
                    refusals_before
                )
            if refusal is not None:
                raise ToolError(f"Navigation refused by the network policy: {refusal}.") from None
            raise ToolError(f"Navigation to {target} failed: {first_line(exc)}") from None
        finally:
            self._navigating = False
        if response is not None and self.network_guard is not None:
            refusal = await self.network_guard.redirect_refusal(response.request)
            if refusal is None and response.headers.get(REFUSED_HEADER.lower()):
                # the egress proxy refused a hop the route could not see (a redirect, a rebinding answer)
                refusal = self.network_guard.last_refusal_for(response.url) or response.headers[REFUSED_HEADER.lower()]
            if refusal is not None:
                await self._contain()
                await leave_page(page)
                raise ToolError(f"Navigation refused by the network policy: {refusal}.")
        try:
            await page.wait_for_load_state("load", timeout=LOAD_GRACE_MS)
        except PlaywrightTimeoutError:
            pass  # a slow subresource: the document is there, the agent can wait or read
        return BetaBrowserNavigateResult(
            url=page.url, title=await self._title(page), status=response.status if response else None
        )

    async def read_page(self, context: BetaToolsetCallContext, input: BetaBrowserReadPageInput) -> str:
        page = await self._page(input.tab_id)
        depth = input.depth if input.depth is not None else READ_PAGE_DEFAULT_DEPTH
        if input.ref:
            snapshot = await self._locator(page, input.ref).aria_snapshot(mode="ai", depth=depth)
        else:
            snapshot = await page.aria_snapshot(mode="ai", depth=depth)
            if depth == READ_PAGE_DEFAULT_DEPTH:
                self._remember(page, snapshot)
        if input.filter == "interactive":
            snapshot = "\n".join(line for line in snapshot.splitlines() if line_role(line) in INTERACTIVE_ROLES)
        return bounded(snapshot, READ_PAGE_MAX_CHARS)

    async def find(self, context: BetaToolsetCallContext, input: BetaBrowserFindInput) -> str:
        page = await self._page(input.tab_id)
        snapshot = await page.aria_snapshot(mode="ai")
        self._remember(page, snapshot)
        matches = rank_snapshot_lines(snapshot, input.query)[:FIND_MAX_MATCHES]
        if not matches:
            return f"No element matches {input.query!r}. Try read_page for the whole tree."
        return "\n".join(matches)

    async def get_page_text(self, context: BetaToolsetCallContext, input: BetaBrowserGetPageTextInput) -> str:
        page = await self._page(input.tab_id)
        return await self._page_text(page, PAGE_TEXT_MAX_CHARS)

    async def _page_text(self, page: Page, limit: int) -> str:
        try:
            text = await page.evaluate("() => document.body ? document.body.innerText : ''")
        except PlaywrightError:
            text = ""
        return bounded(str(text or ""), limit)

    async def screenshot(
        self, context: BetaToolsetCallContext, input: BetaBrowserScreenshotInput
    ) -> BetaScreenshotResult:
        page = await self._page(input.tab_id)
        png = await self._screenshot(page)
        return BetaScreenshotResult(data=base64.b64encode(png).decode("ascii"), media_type="image/png")

    async def _screenshot(self, page: Page) -> bytes:
        png = await page.screenshot(type="png", timeout=ACTION_TIMEOUT_MS)
        if self.on_screenshot is not None:
            stored = self.on_screenshot(png)
            if inspect.isawaitable(stored):
                stored = await stored
            self.last_screenshot_url = stored
        return png

    async def wait(self, context: BetaToolsetCallContext, input: BetaBrowserWaitInput) -> str | None:
        self._snapshot = None  # the page may change by itself meanwhile
        await asyncio.sleep(max(0.0, min(float(input.duration), MAX_WAIT_SECONDS)))
        return None

    # --- acting -----------------------------------------------------------------------------------

    def _locator(self, page: Page, ref: str) -> Locator:
        return page.locator(f"aria-ref={normalize_ref(ref)}")

    async def _click(self, input: Any, *, button: str = "left", click_count: int = 1) -> str | None:
        page = await self._page(input.tab_id)
        modifiers = parse_chord(input.modifiers) if input.modifiers else []
        target = input.target
        if target.type == "ref":
            action = self._locator(page, target.ref).click(
                button=button,  # type: ignore[arg-type]
                click_count=click_count,
                modifiers=modifiers,  # type: ignore[arg-type]
            )
        else:
            action = click_at(page, target.x, target.y, button=button, click_count=click_count, modifiers=modifiers)
        await settled(self._watch(page), action)
        return None

    async def left_click(self, context: BetaToolsetCallContext, input: BetaBrowserLeftClickInput) -> str | None:
        return await self._click(input)

    async def right_click(self, context: BetaToolsetCallContext, input: BetaBrowserRightClickInput) -> str | None:
        return await self._click(input, button="right")

    async def double_click(self, context: BetaToolsetCallContext, input: BetaBrowserDoubleClickInput) -> str | None:
        return await self._click(input, click_count=2)

    async def triple_click(self, context: BetaToolsetCallContext, input: BetaBrowserTripleClickInput) -> str | None:
        return await self._click(input, click_count=3)

    async def hover(self, context: BetaToolsetCallContext, input: BetaBrowserHoverInput) -> str | None:
        page = await self._page(input.tab_id)
        if input.target.type == "ref":
            await self._locator(page, input.target.ref).hover()
        else:
            await page.mouse.move(input.target.x, input.target.y)
        return None

    async def type(self, context: BetaToolsetCallContext, input: BetaBrowserTypeInput) -> str | None:
        page = await self._page(input.tab_id)
        await page.keyboard.type(self._with_secrets(input.text))
        return None

    def _with_secrets(self, text: str) -> str:
        """What to type for text the agent wrote: its {{secret:NAME}} placeholders replaced by the run's values."""
        try:
            return substitute(text, self.secrets)
        except UnknownSecret as error:
            raise ToolError(str(error)) from None

    async def key(self, context: BetaToolsetCallContext, input: BetaBrowserKeyInput) -> str | None:
        page = await self._page(input.tab_id)
        presses = [playwright_key_chord(chord) for chord in input.text.split()]
        if not presses:
            raise ToolError("No key was given.")
        await settled(self._watch(page), press_keys(page, presses, max(1, input.repeat or 1)))
        return None

    async def form_input(self, context: BetaToolsetCallContext, input: BetaBrowserFormInputInput) -> str | None:
        page = await self._page(input.tab_id)
        locator = self._locator(page, input.target.ref)
        kind = await locator.evaluate(
            "el => el.tagName === 'SELECT' ? 'select' : (el.type === 'checkbox' || el.type === 'radio'"
            " || ['checkbox', 'radio', 'switch'].includes(el.getAttribute('role'))) ? 'check' : 'fill'"
        )
        value = input.value
        if kind == "check":
            await locator.set_checked(as_bool(value))
        elif kind == "select":
            text = value_text(value)
            try:
                await locator.select_option(value=text, timeout=2_000)
            except PlaywrightError:
                await locator.select_option(label=text)
        else:
            await locator.fill(self._with_secrets(value_text(value)))
        return None

    async def scroll(self, context: BetaToolsetCallContext, input: BetaBrowserScrollInput) -> str | None:
        page = await self._page(input.tab_id)
        distance = SCROLL_PIXELS_PER_NOTCH * max(1, min(input.scroll_amount or 3, 10))
        dx, dy = {"up": (0, -distance), "down": (0, distance), "left": (-distance, 0), "right": (distance, 0)}[
            input.scroll_direction
        ]
        # window.scrollBy, not mouse.wheel: with --disable-gpu a screenshot right after a wheel comes back blank
        await page.evaluate(SCROLL_AT_POINT, {"x": input.target.x, "y": input.target.y, "dx": dx, "dy": dy})
        return None

    async def scroll_to(self, context: BetaToolsetCallContext, input: BetaBrowserScrollToInput) -> str | None:
        page = await self._page(input.tab_id)
        await self._locator(page, input.target.ref).scroll_into_view_if_needed()
        return None

    async def javascript_exec(self, context: BetaToolsetCallContext, input: BetaBrowserJavascriptExecInput) -> str:
        page = await self._page(input.tab_id)
        # an expression, as the tool says ("do NOT use return"); eval keeps statements working too
        result = await page.evaluate(
            "code => { const value = (0, eval)(code); return value === undefined ? 'undefined' : JSON.stringify(value) ?? String(value); }",
            input.text,
        )
        return bounded(str(result), PAGE_TEXT_MAX_CHARS)


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


async def leave_page(page: Page) -> None:
    with contextlib.suppress(PlaywrightError):
        if not page.is_closed() and page.url != "about:blank":
            await page.goto("about:blank")


async def click_at(page: Page, x: int, y: int, *, button: str, click_count: int, modifiers: list[str]) -> None:
    for key in modifiers:
        await page.keyboard.down(key)
    try:
        await page.mouse.click(x, y, button=button, click_count=click_count)  # type: ignore[arg-type]
    finally:
        for key in reversed(modifiers):
            await page.keyboard.up(key)


async def press_keys(page: Page, chords: list[str], repeat: int) -> None:
    for _ in range(repeat):
        for chord in chords:
            await page.keyboard.press(chord)


def fingerprint_of(url: str, snapshot: str) -> str:
    """A short hash of a page's URL and accessibility snapshot, its `[ref=…]` numbering left out."""
    return hashlib.sha256(f"{url}\n{REF_MARK.sub('', snapshot)}".encode()).hexdigest()[:16]


def normalize_ref(ref: str) -> str:
    """Playwright's ref (`e12`, `f1e3`) from what the model wrote: `e12`, `ref_e12`, `ref=e12`, `[ref=e12]`."""
    ref = ref.strip().strip("[]")
    for prefix in ("ref=", "ref_", "ref-"):
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
    if ref.isdigit():  # "ref_7" in the tool's own examples
        ref = f"e{ref}"
    return ref


def line_role(line: str) -> str | None:
    match = ROLE_OF_LINE.match(line)
    return match.group(1) if match else None


def rank_snapshot_lines(snapshot: str, query: str) -> list[str]:
    """Snapshot lines with a ref that share words with `query`, best first; a role word ("button") counts too."""
    words = [word for word in re.findall(r"[\w-]+", query.lower()) if len(word) > 1]
    scored: list[tuple[int, int, str]] = []
    for index, line in enumerate(snapshot.splitlines()):
        if not REF_IN_LINE.search(line):
            continue
        lowered = line.lower()
        score = sum(2 if f'"{word}' in lowered or f" {word}" in lowered else 1 for word in words if word in lowered)
        if score:
            scored.append((-score, index, line.strip()))
    return [line for _, _, line in sorted(scored)]


def playwright_key_chord(chord: str) -> str:
    """`ctrl+shift+Return` → `Control+Shift+Enter`; single characters pass through."""
    return "+".join(playwright_key(part) for part in chord.split("+") if part)


def playwright_key(name: str) -> str:
    if len(name) == 1:
        return name
    return KEY_ALIASES.get(name.lower(), name)


def parse_chord(modifiers: str) -> list[str]:
    keys = [playwright_key(part) for part in re.split(r"[+\s]+", modifiers) if part]
    unknown = [key for key in keys if key not in MODIFIER_KEYS]
    if unknown:
        raise ToolError(f"Not a modifier key: {', '.join(unknown)} (use shift, ctrl, alt or cmd).")
    return keys


def as_bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on", "checked")
    return bool(value)


def value_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
