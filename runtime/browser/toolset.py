"""The Playwright driver of the SDK's browser toolset, with the platform's extras (secrets typed, dialogs, the
network guard, the final view): the members a run's agent calls, one BrowserContext per run."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from anthropic.tools import ToolError
from anthropic.tools.browser import (
    BetaAsyncAbstractBrowserToolset20260801,
    BetaBrowserNavigateResult,
    BetaBrowserState,
    BetaConfirmContext,
    BetaDialogDismissed,
    BetaLocalFilePolicy,
    BetaNavigationRefused,
    BetaScreenshotResult,
    BetaToolsetCallContext,
    TabMissingError,
)
from anthropic.types.beta import (
    BetaBrowserCloseTabInput,
    BetaBrowserDoubleClickInput,
    BetaBrowserFileUploadInput,
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
    BrowserContext,
    Dialog,
    Locator,
    Page,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from agent_platform.lib.text import bounded, first_line
from agent_platform.netpolicy import BlockedRequest, normalize_url
from runs.secrets import SecretRefusedHere, UnknownSecret, substitute
from runtime.browser.downloads import RunDownloads
from runtime.browser.egress_proxy import PROXY_ERROR_HEADER, REFUSED_HEADER
from runtime.browser.navigation import LOAD_GRACE_MS, SCROLL_AT_POINT, NavigationWatch, settled
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.parsing import (
    INTERACTIVE_ROLES,
    KEY_ALIASES,
    as_bool,
    fingerprint_of,
    line_role,
    normalize_ref,
    parse_chord,
    playwright_key_chord,
    rank_snapshot_lines,
    value_text,
)
from runtime.browser.targets import (
    describe,
    describe_focused,
    locate,
    main_frame_of,
    printed_as,
    ref_frame,
    structure_fingerprint,
)

log = logging.getLogger(__name__)

READ_PAGE_MAX_CHARS = 50_000  # the tool's documented cap


PAGE_TEXT_MAX_CHARS = 50_000


FINAL_VIEW_TEXT_MAX_CHARS = 20_000


FIND_MAX_MATCHES = 20


ACTION_TIMEOUT_MS = 10_000


NAVIGATION_TIMEOUT_MS = 30_000


SCROLL_PIXELS_PER_NOTCH = 100


# The member a click was, by (button, click count), as take_step names it.
CLICK_MEMBERS = {("left", 1): "left_click", ("left", 2): "double_click", ("left", 3): "triple_click"}
CLICK_MEMBERS |= {("right", 1): "right_click"}


MAX_WAIT_SECONDS = 30.0


# read_page's default depth; a snapshot taken for the fingerprint uses it too, so the two hash alike.
READ_PAGE_DEFAULT_DEPTH = 15


KEY_ALIASES.update({f"f{n}": f"F{n}" for n in range(1, 13)})


def proxy_failure_text(target: str, proxy: str, reason: str) -> str:
    """The tool result of a navigation the run's upstream proxy failed: the agent should not retry blindly."""
    return (
        f"Navigation to {target} failed: the run's upstream proxy {proxy} failed: {reason}. Every page goes through "
        "this proxy, so other pages will likely fail the same way; report it rather than retrying many times."
    )


async def approve(context: BetaConfirmContext) -> bool:
    """The confirm callable of a run whose operator enabled JavaScript or gave it files: they enabled the member for
    the whole run (file_upload's paths have been confined to the run's own files by the file policy before this)."""
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
        secret_domains: dict[str, list[str]] | None = None,
        downloads: RunDownloads | None = None,
        upload_dir: str | None = None,
    ) -> None:
        # file_upload is off unless the run was given files: a page could otherwise ask for any file the worker reads
        configs: dict[str, Any] = {
            "javascript_exec": {"enabled": bool(allow_javascript)},
            "file_upload": {"enabled": upload_dir is not None},
        }
        kwargs: dict[str, Any] = {"configs": configs}
        if upload_dir is not None:
            # the SDK's own file_upload member, confined to the run's directory that holds only the run's files
            kwargs["file_policy"] = BetaLocalFilePolicy(upload_roots=[upload_dir])
            kwargs["confirm"] = approve
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
        self.secret_domains = dict(secret_domains or {})
        self.downloads = downloads
        if downloads is not None:
            downloads.watch_responses(context)
        self.last_screenshot_url: str | None = None
        self._tabs: dict[str, Page] = {}
        self._watches: dict[Page, NavigationWatch] = {}
        self._snapshot: tuple[Page, str, str] | None = None  # (tab, url, aria snapshot) of the turn's last read
        # Each tab's last whole-page snapshot: how its own document's refs begin (runtime.browser.targets.main_frame_of)
        # and what it printed for a ref, which is what an action's target is first taken for (printed_as)
        self._printed: weakref.WeakKeyDictionary[Page, str] = weakref.WeakKeyDictionary()
        # The snapshot the last action took of the page it left, while no other member has run since in the same
        # reply: a read_page right after it reads that one rather than a second of the same page (forget_left).
        self._left: tuple[Page, str, str] | None = None
        # Each tab's title as read since the last member that acts, in this reply, with the URL it was read at: the
        # state after an action and after the read_page that follows it cost no round trip of their own (_title).
        self._titles: dict[Page, tuple[str, str]] = {}
        # What the last acting member acted on and where it left the page (take_step), for a recipe made later
        self._target: dict[str, Any] | None = None
        self._step: dict[str, Any] | None = None
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

    def active_page(self) -> Page | None:
        """The tab the agent works in, if it is open (the live view shows it; a person in control drives it)."""
        page = self._tabs.get(self._active) if self._active is not None else None
        return None if page is None or page.is_closed() else page

    @property
    def last_snapshot(self) -> str | None:
        """The accessibility snapshot the last read_page or find took of the active tab, or the one an action took of
        the page it left (for its recipe step's checkpoint), while no other member has touched a tab since (every
        member goes through `_page`, which forgets it); None otherwise."""
        if self._snapshot is None:
            return None
        page, url, snapshot = self._snapshot
        active = self._tabs.get(self._active) if self._active else None
        return snapshot if page is active and page.url == url and not page.is_closed() else None

    def _remember(self, page: Page, snapshot: str) -> None:
        self._snapshot = (page, page.url, snapshot)
        self._printed[page] = snapshot

    def forget_left(self) -> None:
        """A new reply of the model's: the page may have changed by itself since the last action's snapshot, so the
        next read_page takes its own, and the tabs' titles are read again. Called between member calls, while no call
        of this toolset runs."""
        self._left = None
        self._titles.clear()

    def take_step(self) -> dict[str, Any] | None:
        """What the last member call that acts on the page did, once: {member, target, url, fingerprint}, the target
        as it was resolved when it acted (runtime.browser.targets.describe; None for a coordinate or no element),
        the URL and structure fingerprint it left. None after a read or a failed action."""
        step, self._step = self._step, None
        return step

    async def _aim(self, page: Page, ref: str | None) -> None:
        """Before an action on the element `ref` names: what it points to, kept for take_step (the element may be gone
        after). None for an action on a coordinate."""
        self._step = None
        if ref is None:
            self._target = None
            return
        ref = normalize_ref(ref)
        # A ref of the page's own document is described without asking Playwright for its frame (two round trips
        # before every action); a ref of a child frame, or of a tab no whole snapshot was taken of, asks.
        printed = self._printed.get(page, "")
        in_frame = ref_frame(ref) not in ("", main_frame_of(printed))
        self._target = await describe(
            page, self._locator(page, ref), in_frame=in_frame, printed=printed_as(printed, ref)
        )

    async def _acted(self, member: str, page: Page) -> None:
        """After an action that succeeded: the step take_step gives, with the page it left (the active tab's)."""
        now = self.active_page() or page
        # read_page's snapshot: remembered, so the loop's page fingerprint after the turn costs no second one; the
        # title for the call's browser state is read beside it, not after
        read, _ = await asyncio.gather(
            now.aria_snapshot(mode="ai", depth=READ_PAGE_DEFAULT_DEPTH, timeout=ACTION_TIMEOUT_MS),
            self._title(now),
            return_exceptions=True,
        )
        if isinstance(read, BaseException) and not isinstance(read, PlaywrightError):
            raise read
        snapshot = read if isinstance(read, str) else ""
        if isinstance(read, str):
            self._remember(now, snapshot)
            self._left = (now, now.url, snapshot)
        self._step = {
            "member": member,
            "target": self._target,
            "url": now.url,
            "fingerprint": structure_fingerprint(now.url, snapshot),
        }
        self._target = None

    async def replay(self, member: str, target: dict[str, Any] | None, value: Any) -> str | None:
        """One recipe step without the model: the element `target` names found by role and accessible name (never
        by ref), then the same action the member does. Returns why the step could not be done (its target is not on
        the page), or None; a failing action raises as the member's would."""
        page = await self._page(None)
        locator = None
        if target is not None:
            locator = await locate(page, target)
            if locator is None:
                return "its target is not on the page"
        self._target = target
        if member == "navigate":
            await self._goto(page, str(value))
        elif member in ("left_click", "double_click", "triple_click", "right_click"):
            if locator is None:
                return "it has no target"
            count = {"double_click": 2, "triple_click": 3}.get(member, 1)
            button = "right" if member == "right_click" else "left"
            await settled(self._watch(page), locator.click(button=button, click_count=count))  # type: ignore[arg-type]
        elif member == "hover":
            if locator is None:
                return "it has no target"
            await locator.hover()
        elif member == "scroll_to":
            if locator is None:
                return "it has no target"
            await locator.scroll_into_view_if_needed()
        elif member == "type":
            if locator is not None:
                await locator.focus()
            await page.keyboard.type(self._with_secrets(str(value), page.url))
        elif member == "key":
            if locator is not None:
                await locator.focus()
            presses = [playwright_key_chord(chord) for chord in str(value).split()]
            await settled(self._watch(page), press_keys(page, presses, 1))
        elif member == "form_input":
            if locator is None:
                return "it has no target"
            await self._set_value(page, locator, value)
        elif member == "wait":
            await asyncio.sleep(max(0.0, min(float(value or 0), MAX_WAIT_SECONDS)))
        else:
            return f"{member} is not a step a recipe replays"
        await self._acted(member, page)
        return None

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
            return await self._viewport_jpeg(page, jpeg_quality), "jpg"
        return await page.screenshot(type="png", timeout=ACTION_TIMEOUT_MS), "png"

    async def _viewport_jpeg(self, page: Page, quality: int) -> bytes:
        """The viewport as Chromium composited it, through the tab's own CDP session: about half the time of
        Playwright's screenshot, which first hides the caret and waits for fonts (an image for people watching needs
        neither), and it leaves no action in the run's trace. Playwright's screenshot where the session cannot."""
        watch = self._watches.get(page)
        session = await watch.session() if watch is not None else None
        if session is not None:
            try:
                shot = await asyncio.wait_for(
                    session.send("Page.captureScreenshot", {"format": "jpeg", "quality": quality}),
                    ACTION_TIMEOUT_MS / 1000,
                )
                return base64.b64decode(shot["data"])
            except (PlaywrightError, TimeoutError, KeyError, ValueError):
                log.info("live-view image through Playwright: the tab's CDP session could not capture", exc_info=True)
        return await page.screenshot(type="jpeg", quality=quality, timeout=ACTION_TIMEOUT_MS)

    async def storage_state(self) -> dict[str, Any]:
        """Cookies, localStorage and IndexedDB of the context, for a follow-up run or a profile to continue from."""
        return dict(await self.context.storage_state(indexed_db=True))

    async def reopen_crashed_tab(self, crashed: Page | None, url: str) -> str:
        """After a tab's renderer crashed (`crashed`, else the active tab): a fresh tab of the same context (its
        cookies and storage kept), now the active one, at `url` when there is one; the crashed tab is closed. Returns
        why `url` could not be opened, or ""."""
        crashed = crashed or self.active_page()
        page = await self.context.new_page()
        self._register(page, opened=False)  # the crashed tab's replacement, now the active one
        if crashed is not None:
            with contextlib.suppress(PlaywrightError):
                await crashed.close()
        if not url or url == "about:blank":
            return ""
        try:
            await self._goto(page, url)
        except (ToolError, PlaywrightError) as error:
            return first_line(error)
        return ""

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
        if self.downloads is not None:
            self.downloads.attach(page)
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
        self._titles.pop(page, None)
        for tab_id, known in list(self._tabs.items()):
            if known is page:
                del self._tabs[tab_id]
                if self._active == tab_id:
                    self._active = next(reversed(self._tabs), None)

    async def _page(self, tab_id: str | None, *, member: bool = True, reads: bool = False) -> Page:
        """The tab a member acts on (the active one by default), once a navigation in flight in it has arrived.
        `reads`: the member only reads the page, so the titles read since the last action still hold."""
        if member:
            self._snapshot = None  # the member may change the page; read_page and find remember theirs afterwards
            self._left = None
            if not reads:
                self._titles.clear()
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
        known = self._titles.get(page)
        if known is not None and known[0] == page.url:
            return known[1]
        url = page.url
        try:
            title = await page.title()
        except PlaywrightError:
            return ""  # mid-navigation
        self._titles[page] = (url, title)
        return title

    async def _entry(self, tab_id: str) -> BetaBrowserStateTabEntryParam:
        page = self._tabs[tab_id]
        return {"tab_id": tab_id, "title": await self._title(page), "url": page.url, "active": tab_id == self._active}

    async def _browser_state(self, context: BetaToolsetCallContext) -> BetaBrowserState:
        await self._contain()
        if self.downloads is not None:
            # a call that started a download reports how it ended (within a bound; later, with the next call)
            await self.downloads.settle()
            self._changes.extend(self.downloads.take_changes())
        tabs = list(await asyncio.gather(*(self._entry(tab_id) for tab_id in list(self._tabs))))
        changes, self._changes = self._changes, []
        return BetaBrowserState(tabs=tabs, state_changes=changes)

    async def list_tabs(
        self, context: BetaToolsetCallContext, input: BetaBrowserListTabsInput
    ) -> list[BetaBrowserStateTabEntryParam]:
        return list(await asyncio.gather(*(self._entry(tab_id) for tab_id in list(self._tabs))))

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
            self._step = None  # back and forward depend on the history: not a step a recipe keeps
            return BetaBrowserNavigateResult(
                url=page.url, title=await self._title(page), status=response.status if response else None
            )
        self._target = None
        result = await self._goto(page, input.url)
        await self._acted("navigate", page)
        return result

    async def _goto(self, page: Page, url: str) -> BetaBrowserNavigateResult:
        target = normalize_url(url)
        self._navigating = True
        refusals_before = self.network_guard.refusal_count if self.network_guard else 0
        failures_before = self.network_guard.proxy_failure_count if self.network_guard else 0
        try:
            response = await page.goto(target, wait_until="domcontentloaded")
        except PlaywrightError as exc:
            if self.downloads is not None and "Download is starting" in str(exc):
                # the URL answered with an attachment: no page, a download (reported with the browser state)
                return BetaBrowserNavigateResult(url=page.url, title=await self._title(page), status=None)
            refusal = None
            if self.network_guard is not None:
                await self._contain()
                refusal = self.network_guard.last_refusal_for(target) or self.network_guard.navigation_refusal_since(
                    refusals_before
                )
            if refusal is not None:
                raise ToolError(f"Navigation refused by the network policy: {refusal}.") from None
            failure = self.network_guard.proxy_failure_since(failures_before) if self.network_guard else None
            if failure is not None:
                raise ToolError(proxy_failure_text(target, failure.proxy, failure.reason)) from None
            raise ToolError(f"Navigation to {target} failed: {first_line(exc)}") from None
        finally:
            self._navigating = False
        if response is not None and response.headers.get(PROXY_ERROR_HEADER.lower()):
            # a plain http:// page: the egress proxy answered for the upstream proxy that failed
            failure = self.network_guard.proxy_failure_since(failures_before) if self.network_guard else None
            proxy = failure.proxy if failure else "of this run"
            reason = failure.reason if failure else response.headers[PROXY_ERROR_HEADER.lower()]
            await leave_page(page)
            raise ToolError(proxy_failure_text(target, proxy, reason))
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
        left = self._left
        watch = self._watches.get(left[0]) if left is not None else None
        if watch is not None and watch.in_flight:
            left = None  # the page is on its way elsewhere: read where it arrives
        page = await self._page(input.tab_id, reads=True)
        depth = input.depth if input.depth is not None else READ_PAGE_DEFAULT_DEPTH
        if input.ref:
            snapshot = await self._locator(page, input.ref).aria_snapshot(mode="ai", depth=depth)
        elif depth == READ_PAGE_DEFAULT_DEPTH and left is not None and left[0] is page and left[1] == page.url:
            # the page as the action just before this read left it, snapshotted with read_page's own options
            snapshot = left[2]
            self._remember(page, snapshot)
        else:
            snapshot = await page.aria_snapshot(mode="ai", depth=depth)
            if depth == READ_PAGE_DEFAULT_DEPTH:
                self._remember(page, snapshot)
            else:
                self._printed[page] = snapshot
        if input.filter == "interactive":
            snapshot = "\n".join(line for line in snapshot.splitlines() if line_role(line) in INTERACTIVE_ROLES)
        return bounded(snapshot, READ_PAGE_MAX_CHARS)

    async def find(self, context: BetaToolsetCallContext, input: BetaBrowserFindInput) -> str:
        page = await self._page(input.tab_id, reads=True)
        snapshot = await page.aria_snapshot(mode="ai")
        self._remember(page, snapshot)
        matches = rank_snapshot_lines(snapshot, input.query)[:FIND_MAX_MATCHES]
        if not matches:
            return f"No element matches {input.query!r}. Try read_page for the whole tree."
        return "\n".join(matches)

    async def get_page_text(self, context: BetaToolsetCallContext, input: BetaBrowserGetPageTextInput) -> str:
        page = await self._page(input.tab_id, reads=True)
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
        page = await self._page(input.tab_id, reads=True)
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
        await self._aim(page, target.ref if target.type == "ref" else None)
        if target.type == "ref":
            action = self._locator(page, target.ref).click(
                button=button,  # type: ignore[arg-type]
                click_count=click_count,
                modifiers=modifiers,  # type: ignore[arg-type]
            )
        else:
            action = click_at(page, target.x, target.y, button=button, click_count=click_count, modifiers=modifiers)
        await settled(self._watch(page), action)
        await self._acted(CLICK_MEMBERS[button, click_count], page)
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
            await self._aim(page, input.target.ref)
            await self._locator(page, input.target.ref).hover()
        else:
            await self._aim(page, None)
            await page.mouse.move(input.target.x, input.target.y)
        await self._acted("hover", page)
        return None

    async def type(self, context: BetaToolsetCallContext, input: BetaBrowserTypeInput) -> str | None:
        page = await self._page(input.tab_id)
        self._step, self._target = None, await describe_focused(page)
        await page.keyboard.type(self._with_secrets(input.text, page.url))
        await self._acted("type", page)
        return None

    def _with_secrets(self, text: str, url: str) -> str:
        """What to type for text the agent wrote into the page at `url`: its {{secret:NAME}} placeholders replaced
        by the run's values, each only on a page of the domains it is allowed on."""
        try:
            return substitute(text, self.secrets, url=url, domains=self.secret_domains)
        except (UnknownSecret, SecretRefusedHere) as error:
            raise ToolError(str(error)) from None

    async def key(self, context: BetaToolsetCallContext, input: BetaBrowserKeyInput) -> str | None:
        page = await self._page(input.tab_id)
        presses = [playwright_key_chord(chord) for chord in input.text.split()]
        if not presses:
            raise ToolError("No key was given.")
        self._step, self._target = None, await describe_focused(page)
        await settled(self._watch(page), press_keys(page, presses, max(1, input.repeat or 1)))
        if not input.repeat or input.repeat == 1:
            await self._acted("key", page)  # a repeated press is not a step a recipe keeps
        return None

    async def form_input(self, context: BetaToolsetCallContext, input: BetaBrowserFormInputInput) -> str | None:
        page = await self._page(input.tab_id)
        locator = self._locator(page, input.target.ref)
        await self._aim(page, input.target.ref)
        await self._set_value(page, locator, input.value)
        await self._acted("form_input", page)
        return None

    async def _set_value(self, page: Page, locator: Locator, value: Any) -> None:
        """form_input's setting of one field: a box checked, an option selected, or text filled."""
        kind = await locator.evaluate(
            "el => el.tagName === 'SELECT' ? 'select' : (el.type === 'checkbox' || el.type === 'radio'"
            " || ['checkbox', 'radio', 'switch'].includes(el.getAttribute('role'))) ? 'check' : 'fill'"
        )
        if kind == "check":
            await locator.set_checked(as_bool(value))
        elif kind == "select":
            text = value_text(value)
            try:
                await locator.select_option(value=text, timeout=2_000)
            except PlaywrightError:
                await locator.select_option(label=text)
        else:
            await locator.fill(self._with_secrets(value_text(value), page.url))

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
        await self._aim(page, input.target.ref)
        await self._locator(page, input.target.ref).scroll_into_view_if_needed()
        await self._acted("scroll_to", page)
        return None

    async def file_upload(self, context: BetaToolsetCallContext, input: BetaBrowserFileUploadInput) -> str | None:
        if input.document_ids:
            raise ToolError("Document ids are not available here: give the paths of the run's files.")
        if not input.paths:
            raise ToolError("Give the paths of the files to set, from the run's files.")
        page = await self._page(input.tab_id)
        # the paths arrive resolved by the file policy: inside the run's upload directory
        await self._locator(page, input.target.ref).set_input_files(list(input.paths))
        return None

    async def javascript_exec(self, context: BetaToolsetCallContext, input: BetaBrowserJavascriptExecInput) -> str:
        page = await self._page(input.tab_id)
        # an expression, as the tool says ("do NOT use return"); eval keeps statements working too
        result = await page.evaluate(
            "code => { const value = (0, eval)(code); return value === undefined ? 'undefined' : JSON.stringify(value) ?? String(value); }",
            input.text,
        )
        return bounded(str(result), PAGE_TEXT_MAX_CHARS)


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
