"""A run's browser as one object: opening it (its context behind the egress guard and the run's upstream proxy, from
its session's or profile's state, with its downloads, live view, a person's control and its trace), recovering it
when its tab crashes or Chromium exits, and closing it (the final view, the downloads settled, the trace kept, the
state written back to the session and the profile). The agent loop, a replay and a sign-in by hand use it; it knows
nothing of the agent: what it has to tell goes out through the `event` callback it is given."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from anthropic.types.beta import BetaToolUseBlock
from django.conf import settings

from agent_platform import metrics
from agent_platform.lib.text import first_line
from runs.models import Run
from runs.proxies import ProxyGone, open_proxy, proxy_policy
from runs.screenshots import save_screenshot
from runs.secret_box import SecretsUnavailable
from runs.secrets import mask
from runtime.browser import control, live_view, tracing
from runtime.browser.downloads import RunDownloads
from runtime.browser.host import BrowserHost
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.recovery import RENDERER_CRASH, LossWatch
from runtime.browser.toolset import PlaywrightBrowserToolset
from runtime.browser.upstream import UpstreamDialer

from . import browser_call, files, profile_state, reference_checks
from .browser_call import BrowserCrashed, crashed_if_gone
from .calls import add_notices, error_text
from .notices import READ_ONLY_MEMBERS

log = logging.getLogger(__name__)
T = TypeVar("T")

# The driver bounds each action itself (navigation 30 s, a wait 30 s); past this margin the browser is considered hung.
BROWSER_CALL_MARGIN_SECONDS = 20
BROWSER_SETUP_TIMEOUT_SECONDS = 60
# Reading the run's storage state on its lane; a slower read is skipped, the last one kept.
STATE_READ_SECONDS = 10

Emit = Callable[[str, dict[str, Any]], object]


class BrowserRefused(Exception):
    """The run's browser cannot be opened as the run asks (its proxy is gone or cannot be opened here, its stored
    state cannot be unsealed): the run fails with `error_code` and this message, never going out without them."""

    def __init__(self, message: str, error_code: str = "") -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass
class BrowserProgress:
    """What the run's browser carries to the worker that continues the run (runtime.checkpoint): the URL of the agent's
    tab after its last step, how often the browser was recovered, and whether the stored state was refused at start
    (then nothing is written back over it)."""

    url: str = ""
    recoveries: int = 0
    started_clean: bool = False


class RunBrowser:
    """One run's browser context on the worker's shared browser host, from open to close.

    `by_hand`: a person drives it (a sign-in by hand): their control is accepted from the start, and it has no
    downloads, no given files and no trace. `resumed_state`: the storage state a continued run starts from (its last
    checkpoint's), else the session's or profile's."""

    def __init__(
        self,
        run: Run,
        host_factory: Callable[[], BrowserHost],
        *,
        event: Emit,
        progress: BrowserProgress | None = None,
        by_hand: bool = False,
    ) -> None:
        self.run = run
        self.host_factory = host_factory
        self.event = event
        self.progress = progress or BrowserProgress()
        self.by_hand = by_hand
        self._host: BrowserHost | None = None
        self._toolset: PlaywrightBrowserToolset | None = None
        self._guard: NetworkGuard | None = None
        # What notices at once that the browser is lost (runtime.browser.recovery).
        self._watch: LossWatch | None = None
        self._upstream: UpstreamDialer | None = None
        self._upload_dir: str | None = None
        self.given_files: list[files.GivenFile] = []
        self.downloads: RunDownloads | None = None
        self.live: live_view.LiveView | None = None  # streams only while an operator watches
        self.control: control.InputDispatcher | None = None  # a person's input while they have control
        # The run's browser state as last read on its lane after an action (in this worker's memory only, like the
        # run's secrets): what a fresh browser starts from when Chromium exits, and what a checkpoint carries.
        self.saved_state: dict[str, Any] | None = None
        # Each such read is in the run's trace, as every call's result is: its values are masked there like the
        # starting and final state's ({value: what the trace shows}, tracing.state_values).
        self.saved_state_values: dict[str, str] = {}
        self.stale = False  # the page may have changed the storage state since it was last read
        self.start_state: dict[str, Any] | None = None
        self.closing_state: dict[str, Any] | None = None
        self.trace_kept = False
        self.failed = False  # hung or lost for good: nothing more is asked of it but to close
        self.final_view: dict[str, Any] | None = None
        self.final_view_fresh = False
        # Reads begun on the host's loop after a step, collected on the run's lane.
        self._image: concurrent.futures.Future[tuple[bytes, str]] | None = None  # until the lane's job takes it
        self._image_capture: concurrent.futures.Future[tuple[bytes, str]] | None = None  # until the next step
        self._state_read: concurrent.futures.Future[dict[str, Any]] | None = None
        self._state_kept: Callable[[], None] | None = None  # the lane's job for a read begun early (begin_state_read)

    @property
    def host(self) -> BrowserHost:
        if self._host is None:
            raise RuntimeError("the run's browser is not open yet")
        return self._host

    @property
    def toolset(self) -> PlaywrightBrowserToolset:
        if self._toolset is None:
            raise RuntimeError("the run's browser is not open yet")
        return self._toolset

    @property
    def guard(self) -> NetworkGuard:
        if self._guard is None:
            raise RuntimeError("the run's browser is not open yet")
        return self._guard

    @property
    def is_open(self) -> bool:
        return self._toolset is not None

    def call(
        self,
        step: Coroutine[Any, Any, T],
        *,
        doing: str,
        timeout: float | None = None,
        crashed: str | Callable[[str], str] = browser_call.CRASHED,
        watched: bool = True,
    ) -> T:
        """One browser step of this run (runtime.browser_call): a hung or crashed browser is BrowserCrashed, at once
        when its tab crashed or Chromium exited (the run's loss watch; `watched=False` for the steps that close)."""
        return browser_call.call(
            self.host,
            step,
            timeout=timeout or settings.BROWSER_ACTION_TIMEOUT_SECONDS + BROWSER_CALL_MARGIN_SECONDS,
            doing=doing,
            crashed=crashed,
            watch=self._watch if watched else None,
        )

    # --- opening --------------------------------------------------------------------------------------------------

    def open(self, resumed_state: dict[str, Any] | None = None) -> None:
        """The run's context from `resumed_state` (a continued run's), else its session's or profile's state, with
        its live view and a person's control; a stored state Chromium refuses is dropped for a clean context.
        BrowserRefused when the run's proxy or stored state cannot be used, BrowserCrashed when no browser starts."""
        run = self.run
        self._upstream = self.upstream_dialer()
        self._host = host = self.host_factory()
        self._guard = NetworkGuard(
            allowed_private_hosts=settings.BROWSER_ALLOWED_PRIVATE_HOSTS,
            allowed_domains=run.allowed_domains or None,
        )
        if not self.by_hand:
            upload_dir, self.given_files = files.prepare_uploads(run)
            self._upload_dir = str(upload_dir) if upload_dir is not None else None
            self.downloads = RunDownloads(
                files.keeper(run),
                max_bytes=settings.RUN_DOWNLOAD_MAX_BYTES,
                max_files=settings.RUN_DOWNLOAD_MAX_FILES,
            )
        try:
            state = resumed_state if resumed_state is not None else profile_state.starting_state(run)
        except SecretsUnavailable as error:
            raise BrowserRefused(str(error)) from None
        self.start_state = state
        try:
            self.open_context(state)
        except BrowserCrashed:
            raise
        except Exception as error:
            if state is None:
                raise BrowserCrashed(f"The browser could not be started: {first_line(error)}") from error
            # a saved state Chromium refuses should not cost the run: start from a clean context instead
            log.warning("run %s: the session's browser state was refused; starting clean", run.public_id)
            self.progress.started_clean = True
            self.open_context(None)
        self.saved_state = None if self.progress.started_clean else state
        self.live = live_view.attach(host, self.toolset, run.public_id)
        # the page of the run's current toolset: a fresh browser's too
        self.control = control.attach(host, run.public_id, lambda: self.toolset.active_page(), accepting=self.by_hand)

    def upstream_dialer(self) -> UpstreamDialer | None:
        """The run's own upstream proxy (its session's), unsealed in this worker's memory; None: out directly. A
        session whose proxy was deleted, or cannot be opened here, fails rather than go out without it."""
        proxy = self.run.session.proxy
        if proxy is None:
            return None
        try:
            upstream = open_proxy(proxy)
        except (ProxyGone, SecretsUnavailable) as error:
            raise BrowserRefused(
                f"The run's proxy cannot be used: {first_line(error)}", Run.ErrorCode.BROWSER_ERROR
            ) from None
        return UpstreamDialer(upstream, timeout=settings.PROXY_CONNECT_TIMEOUT_SECONDS, policy=proxy_policy())

    def open_context(self, storage_state: dict[str, Any] | None) -> None:
        """A context of the run's own on the host (a relaunched Chromium's after a loss), with its toolset."""
        run, host, guard = self.run, self.host, self.guard

        def store(png: bytes) -> str:
            return save_screenshot(run.public_id, png)

        async def build() -> tuple[PlaywrightBrowserToolset, LossWatch]:
            context = await host.new_context(
                storage_state=storage_state,
                network_guard=guard,
                upstream=self._upstream,
                viewport=(
                    run.viewport_width or settings.BROWSER_VIEWPORT_WIDTH,
                    run.viewport_height or settings.BROWSER_VIEWPORT_HEIGHT,
                ),
                accept_downloads=not self.by_hand,
            )
            toolset = PlaywrightBrowserToolset(
                context=context,
                on_screenshot=store,
                network_guard=guard,
                allow_javascript=run.allow_javascript,
                secrets=run.secrets,
                secret_domains=run.secret_domains,
                downloads=self.downloads,
                upload_dir=self._upload_dir,
            )
            await toolset.install_guard()
            return toolset, LossWatch(context)

        self._toolset, self._watch = self.call(
            build(),
            doing="open a context",
            timeout=BROWSER_SETUP_TIMEOUT_SECONDS,
            crashed=lambda error: f"The browser could not be started: {error}",
            watched=False,
        )

    def open_page(self, url: str, *, doing: str, timeout: float | None = None) -> str:
        """Open `url` in the agent's tab; returns why it did not open, or "" (a crash is raised)."""
        self.stale = True  # the page may set cookies and storage as it loads, as an action's page does
        try:
            self.call(
                self.toolset.open(url),
                doing=doing,
                timeout=timeout,
                crashed=lambda error: f"The browser crashed opening the start URL: {error}",
            )
        except BrowserCrashed:
            raise
        except Exception as error:
            return error_text(error)
        return ""

    def start_trace(self) -> None:
        """The run's replay trace, from the agent's first action (a trace's DOM snapshot of a page that hangs would
        hang the start URL's load with it)."""
        if self.by_hand:
            return
        self.call(
            tracing.start(self.toolset.context, self.run.public_id),
            doing="start the run's trace",
            timeout=BROWSER_SETUP_TIMEOUT_SECONDS,
        )

    # --- a step ---------------------------------------------------------------------------------------------------

    def act(self, use: BetaToolUseBlock, *, new_reply: bool = True) -> dict[str, Any]:
        """One member call of the agent's through the toolset, with what follows it: the network policy's refusals
        and the downloads reported, a failure with the browser gone raised as BrowserCrashed, and what a call that
        worked acted on and the page it left as an `agent.target` event (a recipe is made from those: runs.recipes).
        `new_reply`: the first browser call of a model reply (time may have passed since the last one)."""
        if use.name not in READ_ONLY_MEMBERS:
            # a read leaves the page as it is, so it may run beside the reads of the page the last action left
            self.reads_done()
        toolset = self.toolset
        if new_reply:
            toolset.forget_left()
        toolset.last_screenshot_url = None
        if self.live is not None:
            self.live.note_action(use.name, use.input)  # the live view's cursor mark
        crashed = f"The browser crashed or disconnected during a {use.name} action."
        self.final_view_fresh = False
        with metrics.step_duration.time():
            block = cast(
                dict[str, Any],
                self.call(toolset.tool_result(use), doing=f"finish a {use.name} action", crashed=crashed),
            )
        self.report_blocked()
        self.report_downloads(block)
        # a member reports its failure in its result: with the browser gone, that failure is a crash
        failed = bool(block.get("is_error"))
        crashed_if_gone(self.host, failed=failed, message=crashed, watch=self._watch)
        if use.name not in READ_ONLY_MEMBERS:
            self.stale = True  # a read of the page leaves its storage state as the last action did
        self.progress.url = self.current_url()
        step = toolset.take_step()
        if step is not None and not failed:
            self.event("agent.target", mask({"tool_use_id": use.id, **step}, self.run.secrets))
        return block

    def report_blocked(self) -> None:
        """Each refusal of the network policy since the last report (the route's or the egress proxy's), for the
        operator as a `network.blocked` event."""
        for blocked in self.guard.take_unreported():
            self.event("network.blocked", {"url": blocked.url, "reason": blocked.reason, "proxy": blocked.by_proxy})
        for failure in self.guard.take_proxy_failures():
            # the proxy's address only: its credentials never leave the worker's memory
            self.event(
                "network.proxy_error",
                {"proxy": failure.proxy, "reason": failure.reason, "destination": failure.destination},
            )

    def report_downloads(self, block: dict[str, Any] | None) -> None:
        """What the run's browser downloaded since the last call: a `file.downloaded` event each (and its webhook),
        and, in the call's result, a line per file kept or refused."""
        downloads = self.downloads
        if downloads is None:
            return
        for kept in downloads.take_kept():
            # with the turn's record, after the call that caused it (a lifecycle event: its webhook follows)
            self.event(
                "file.downloaded",
                {"id": kept["id"], "name": kept["name"], "size": kept["size"], "sha256": kept["sha256"]},
            )
        notes = downloads.take_notes()
        if notes and block is not None:
            add_notices(block, notes)

    def current_url(self) -> str:
        """The URL of the agent's tab, as the driver last knew it (a dead tab keeps its last URL)."""
        page = self._toolset.active_page() if self._toolset is not None else None
        return page.url if page is not None else ""

    # --- after a step, off the agent's critical path -----------------------------------------------------------------

    def stale_state_read(self) -> Callable[[], None] | None:
        """After a step (or a person's control): the read of the browser's storage state, started at once on the host's
        loop, and what the lane runs to keep its result; None when nothing may have changed the state since the last
        read. The next step waits for it (a state read while a step acts would be neither the old page's nor the new
        one's)."""
        kept, self._state_kept = self._state_kept, None
        if kept is not None and not self.stale:
            return kept  # begun after the turn's last action, and nothing has acted since
        if not self.stale:
            return None
        self.stale = False
        self._state_read = future = self.started(self.toolset.storage_state())

        def keep() -> None:
            """Read the run's storage state (cookies, local storage, IndexedDB) into this worker's memory: what a fresh
            browser starts from if Chromium exits, and what the next checkpoint carries. Never raises: a state that
            cannot be read now leaves the last one."""
            try:
                state = self.result_of(future, "give its storage state", STATE_READ_SECONDS)
            except Exception as error:
                log.info("run %s: browser state not kept: %s", self.run.public_id, first_line(error))
                return
            self.saved_state = state
            self.saved_state_values |= tracing.state_values(state)

        return keep

    def begin_state_read(self) -> None:
        """Start the storage-state read now, after the turn's last action, when only reads of the page follow it: it
        runs beside them and is over before the next model reply acts (stale_state_read hands the lane its job)."""
        if self.stale and self._state_kept is None:
            self._state_kept = self.stale_state_read()

    def begin_live_view_image(self) -> None:
        """Start taking the viewport image of the page as the last step left it, for people watching, at once on the
        host's loop: the lane saves it (live_view_image) while the run goes on, and the next step waits for it to be
        taken (reads_done)."""
        self._image = self._image_capture = self.started(self.toolset.viewport_image(settings.LIVE_VIEW_JPEG_QUALITY))

    def live_view_image(self) -> Callable[[], str | None]:
        """The image begun by begin_live_view_image, taken from the browser's side now, and the lane's job that saves
        it: its URL, or None. Without one begun, the job takes one then."""
        future, self._image = self._image, None

        def save() -> str | None:
            try:
                if future is None:
                    image, extension = self.call(
                        self.toolset.viewport_image(settings.LIVE_VIEW_JPEG_QUALITY), doing="give the live-view image"
                    )
                else:
                    image, extension = self.result_of(future, "give the live-view image")
            except Exception as error:  # the live view goes without this frame; the run meets a dead browser itself
                log.info("run %s: no live-view image: %s", self.run.public_id, first_line(error))
                return None
            return save_screenshot(self.run.public_id, image, extension)

        return save

    def started(self, step: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """`step` started on the host's loop, not waited for (a closed host fails the future at once)."""
        if self._host is None or not self._host.is_connected:
            step.close()
            failed: concurrent.futures.Future[T] = concurrent.futures.Future()
            failed.set_exception(RuntimeError("the browser is not connected"))
            return failed
        return asyncio.run_coroutine_threadsafe(step, self._host.loop)

    def result_of(self, future: concurrent.futures.Future[T], doing: str, timeout: float | None = None) -> T:
        """The result of a step `started`, within `timeout` seconds (a step's own by default; then it is cancelled)."""
        timeout = timeout or settings.BROWSER_ACTION_TIMEOUT_SECONDS + BROWSER_CALL_MARGIN_SECONDS
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"The browser did not {doing} within {timeout} s.") from None

    def reads_done(self) -> None:
        """Before a step: the reads begun after the last one (the live-view image, the storage state) are over, so
        each saw the page that step left."""
        pending: list[concurrent.futures.Future[Any]] = [
            future for future in (self._image_capture, self._state_read) if future is not None
        ]
        self._image_capture = self._state_read = None
        if pending:
            concurrent.futures.wait(pending, timeout=BROWSER_SETUP_TIMEOUT_SECONDS)

    def fingerprint(self) -> str | None:
        """The page's fingerprint, for stagnation notices: it hashes the last read_page or find snapshot when there
        is one (the toolset's last_snapshot), so a step that read costs no second one. None when it cannot be read."""
        try:
            return self.call(self.toolset.page_fingerprint(), doing="answer")
        except BrowserCrashed:
            raise
        except Exception as error:
            log.info("run %s: could not observe the page: %s", self.run.public_id, first_line(error))
            return None

    # --- recovering -------------------------------------------------------------------------------------------------

    def recover(self, crash: BrowserCrashed) -> tuple[str, str]:
        """A tab that crashed or a browser that exited is not the agent's failure: the run goes on in a fresh tab of
        the same context (a renderer crash leaves the context and its cookies) or in a fresh browser started from the
        run's last saved state (Chromium exited: the host relaunches it on the next context), at the URL it was on,
        with a `browser.restarted` event. Returns the URL it is at now and why it could not reopen its own, or "".

        A hang (no cause) or a loss past RUN_MAX_RECOVERIES is raised again: the run ends browser_error."""
        self.final_view_fresh = False
        if crash.cause is None:
            raise crash
        limit = settings.RUN_MAX_RECOVERIES
        recoveries = self.progress.recoveries
        if recoveries >= limit:
            raise BrowserCrashed(
                f"{crash} The run's browser had already been restarted {recoveries} "
                f"time{'s' if recoveries != 1 else ''}, its limit (RUN_MAX_RECOVERIES={limit})."
            ) from crash
        self.progress.recoveries = recoveries = recoveries + 1
        url = crash.url or self.current_url() or self.progress.url
        log.warning("run %s: %s recovering (%d of %d)", self.run.public_id, crash, recoveries, limit)
        # a renderer crash leaves the context, unless Chromium went with it
        problem = self.fresh_tab(url) if crash.cause == RENDERER_CRASH and self.host.is_connected else None
        if problem is None:
            problem = self.fresh_browser(crash, url)
        now = self.current_url() or url
        self.event("browser.restarted", {"cause": crash.cause, "url": now, "recovery": recoveries})
        return now, problem

    def fresh_tab(self, url: str) -> str | None:
        """A renderer crash: the crashed tab replaced by a fresh one of the same context at `url`. Returns why `url`
        did not open ("" when it did), or None when the context itself is gone too."""
        toolset, watch = self.toolset, self._watch

        async def replace() -> str:
            crashed = watch.crashed if watch is not None else None
            if watch is not None:
                watch.forgive()
            return await toolset.reopen_crashed_tab(crashed, url)

        try:
            return self.call(replace(), doing="open a fresh tab", watched=False)
        except Exception as error:
            log.warning("run %s: no fresh tab (%s); starting a fresh browser", self.run.public_id, first_line(error))
            return None

    def fresh_browser(self, crash: BrowserCrashed, url: str) -> str:
        """Chromium exited: a fresh context from the run's last saved state (on a relaunched Chromium, which every run
        on this host shares; each run recovers itself), with the network guard, downloads, live view, person control
        and a new trace (the dead context's trace is lost with it). Returns why `url` did not open, or ""."""
        with contextlib.suppress(Exception):
            self.call(
                self.toolset.close(),
                doing="close the lost context",
                timeout=BROWSER_SETUP_TIMEOUT_SECONDS,
                watched=False,
            )
        try:
            try:
                self.open_context(self.saved_state)
            except Exception:
                # Runs sharing this host recover at once: one may be handed the Chromium that is still going down
                # ("has been closed"); the host relaunches on the next context, so once more.
                log.info("run %s: the fresh context failed; once more on a relaunched browser", self.run.public_id)
                self.open_context(self.saved_state)
        except Exception as error:
            raise BrowserCrashed(f"{crash} A fresh browser could not be started: {first_line(error)}") from error
        if self.live is not None:
            self.live.follow(self.toolset)
        self.start_trace()
        if not url or url == "about:blank":
            return ""
        self.stale = True
        try:
            self.call(self.toolset.open(url), doing="reopen the page", crashed=lambda error: f"{crash} {error}")
        except BrowserCrashed:
            raise
        except Exception as error:
            return error_text(error)
        return ""

    # --- closing ----------------------------------------------------------------------------------------------------

    def capture_final_view(self) -> dict[str, Any] | None:
        """The page as the agent last saw it (url, title, bounded text, viewport screenshot URL), for the judge."""
        if self.final_view_fresh:
            return self.final_view
        if self._toolset is None or not self.host.is_connected:
            return self.final_view
        try:
            view = self.call(self.toolset.final_view(), doing="give its final view")
        except Exception as error:
            log.info("run %s: no final view: %s", self.run.public_id, first_line(error))
            return self.final_view
        png = view.pop("screenshot_png", None)
        masked: dict[str, Any] = mask(view, self.run.secrets)  # the judge and the grader read it
        masked["screenshot_url"] = save_screenshot(self.run.public_id, png) if png else None
        masked.update(self.reference_texts())  # a suite task's program checks, read before the browser closes
        self.final_view = masked
        self.final_view_fresh = True
        return masked

    def reference_texts(self) -> dict[str, Any]:
        """{"reference_texts": [...]} for the final view when the run's task has program checks, else nothing."""
        checks = (self.run.metadata or {}).get("reference_locators")
        if not isinstance(checks, list) or not checks or self._toolset is None:
            return {}
        try:
            texts = self.call(reference_checks.read_all(self.toolset, checks), doing="read its reference checks")
        except Exception as error:
            log.info("run %s: reference checks not read: %s", self.run.public_id, first_line(error))
            return {"reference_texts": [None] * len(checks)}
        return {"reference_texts": mask(texts, self.run.secrets)}

    def close(self) -> None:
        """Record the final view, keep the session's cookies and storage for its follow-up runs and write them to
        the run's profile (unless it said save_profile false), close the context. A browser that failed writes
        nothing: its state may be half."""
        if self._toolset is None:
            files.remove_run_directory(self.run)
            return
        try:
            if self.failed:
                # A hung page would hang each browser call again for its whole timeout: keep what the agent last
                # saw, if anything, and only close the context.
                if self.final_view is not None:
                    self.event("agent.final_view", self.final_view)
                return
            view = self.capture_final_view()
            if view is not None:
                self.event("agent.final_view", view)
            if self.downloads is not None and self.host.is_connected:
                # a download still arriving when the run ends is kept all the same (the agent is not told)
                self.call(self.downloads.settle(), doing="finish its downloads")
                self.report_downloads(None)
            # The trace ends before the state is read: a trace records each call's result, and the storage state is
            # every cookie and stored value of the profile, which no trace may hold (it masks their values instead).
            self.keep_trace()
            state = self.final_state()
            if state is not None:
                self.write_back(state)
        except Exception:
            log.warning("run %s: could not save the browser state", self.run.public_id, exc_info=True)
        finally:
            self.keep_trace()
            try:
                self.call(
                    self.closed(), doing="close the context", timeout=BROWSER_SETUP_TIMEOUT_SECONDS, watched=False
                )
            except Exception:
                log.warning("run %s: the browser context did not close cleanly", self.run.public_id, exc_info=True)
            files.remove_run_directory(self.run)

    def write_back(self, state: dict[str, Any]) -> None:
        """The run's final state kept for its session's follow-ups and written to its profile."""
        profile_state.keep_session_state(self.run, state)
        if self.progress.started_clean and self.run.profile_id is not None:
            # Chromium refused the stored state: writing this one back would erase the profile's sign-in
            self.event("profile.not_saved", {"reason": "the profile's state was refused at start"})
            return
        profile = profile_state.write_profile(self.run, state)
        if profile is not None:
            self.event("profile.saved", profile_state.saved_event(profile))

    def discard(self) -> None:
        """Close without keeping anything: no trace, no state written anywhere (a run left to another worker, which
        starts from its checkpoint's state; a sign-in, which saved on Save or not at all). Never raises."""
        self.trace_kept = True
        for stream in (self.live, self.control):
            if stream is not None:
                try:
                    stream.stop()
                except Exception:
                    log.warning("run %s: a live stream did not stop cleanly", self.run.public_id, exc_info=True)
        if self._toolset is not None and self._host is not None and self._host.is_connected:
            try:
                self.call(
                    self.closed(), doing="close the context", timeout=BROWSER_SETUP_TIMEOUT_SECONDS, watched=False
                )
            except Exception:
                log.warning("run %s: the context did not close cleanly", self.run.public_id, exc_info=True)
        files.remove_run_directory(self.run)

    async def closed(self) -> None:
        """Close the run's context; the loss watch then hears the close as the run's own."""
        if self._watch is not None:
            self._watch.closing = True
        await self.toolset.close()

    def final_state(self) -> dict[str, Any] | None:
        """The browser's storage state as the run leaves it (read once, after the trace stopped); None without a
        browser to ask."""
        if self.closing_state is None and self.host.is_connected and not self.failed:
            self.closing_state = self.call(
                self.toolset.storage_state(), doing="give its storage state", timeout=BROWSER_SETUP_TIMEOUT_SECONDS
            )
        return self.closing_state

    def keep_trace(self) -> None:
        """Stop the live view and control and keep the run's Playwright trace (secrets masked) before the context
        closes; neither may cost the run its ending. Once."""
        if self.trace_kept:
            return
        self.trace_kept = True
        try:
            if self.live is not None:
                self.live.stop()
            if self.control is not None:
                self.control.stop()
            # a hung page could hang the trace's stop too: a run the browser failed keeps no trace
            if self.host.is_connected and not self.failed and not self.by_hand:
                tracing.finish(
                    self.host,
                    self.toolset.context,
                    self.run.public_id,
                    self.run.secrets,
                    state=lambda: self.saved_state_values | tracing.state_values(self.start_state, self.final_state()),
                )
        except Exception:
            log.warning("run %s: the trace was not kept", self.run.public_id, exc_info=True)
