"""The agent loop of one run: model turns, browser actions, the limits and the verdict turn, and how the run ends."""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar, cast

from anthropic.types.beta import BetaContentBlock, BetaMessage, BetaToolUseBlock
from django.conf import settings
from django.db import connection
from django.utils import timezone
from playwright.async_api import Error as PlaywrightError

from agent_platform import metrics, telemetry
from agent_platform.lib.request_size import size_of
from agent_platform.lib.text import content_text, first_line
from agent_platform.llm import ModelUnavailable, model_profile, thinking_param
from runs import evaluation, handover, human, lifecycle, spending
from runs.judging.outcomes import OutcomeGrader
from runs.models import Run, RunMessage
from runs.proxies import ProxyGone, open_proxy, proxy_policy
from runs.screenshots import save_screenshot
from runs.secret_box import SecretsUnavailable
from runs.secrets import mask, placeholder, prompt_section
from runs.usage import Answered, compaction_iterations, read_usage, send_message
from runtime.browser import control, live_view, tracing
from runtime.browser.downloads import RunDownloads
from runtime.browser.host import BrowserHost
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.recovery import RENDERER_CRASH, LossWatch
from runtime.browser.toolset import PlaywrightBrowserToolset
from runtime.browser.upstream import UpstreamDialer

from . import asking, browser_call, checkpoint, context, drain, extraction, files, notices, profile_state, prompts
from .browser_call import BrowserCrashed, crashed_if_gone
from .calls import (
    CallResult,
    ReplyCalls,
    add_notices,
    check_done,
    error_text,
    is_browser,
    is_done,
    result_block,
    text_block,
    tool_result_event,
    tool_use_event,
)
from .lane import LaneFailed
from .record import NotThisWorkers, TurnRecord
from .verdict import Ending, Next, Phase, Verdict

log = logging.getLogger(__name__)
T = TypeVar("T")

EPHEMERAL = {"type": "ephemeral"}
# The driver bounds each action itself (navigation 30 s, a wait 30 s); past this margin the browser is considered hung.
BROWSER_CALL_MARGIN_SECONDS = 20
BROWSER_SETUP_TIMEOUT_SECONDS = 60
# Reading the run's storage state on its lane; a slower read is skipped, the last one kept.
STATE_READ_SECONDS = 10
# Breakpoints on the last user messages, so each request reads the previous one's prefix from the cache; with the
# system prompt's that makes three of the four the API allows.
MESSAGE_BREAKPOINTS = 2
# pause_turn replies in a row that are sent back to continue before the run gives up.
MAX_PAUSES = 5


class Stop(Exception):
    """Raised at a safe point to end the run now (cancel, wall clock)."""

    def __init__(self, ending: Ending) -> None:
        super().__init__(ending.message)
        self.ending = ending


class HandOver(Exception):
    """Raised to leave the run to another worker without ending it (runs.handover): `cause` is why it is handed over
    (the worker is draining), or None when it is another worker's already (this one was taken for lost)."""

    def __init__(self, cause: str | None) -> None:
        super().__init__(cause or "the run is another worker's")
        self.cause = cause


class Heartbeat(threading.Thread):
    """Keeps the run's heartbeat fresh while the loop waits on the model or the browser, so the reaper fails only
    runs whose worker is really gone; it gives up past the run's time limit, so a hung loop is reaped after all."""

    def __init__(self, run: Run, handovers: int) -> None:
        super().__init__(name=f"heartbeat-{run.public_id}", daemon=True)
        self.run_row = run
        self.handovers = handovers
        self.superseded = False  # the run was handed over to another worker: this one must leave it
        self.interval = max(1.0, min(10.0, settings.RUN_STALE_AFTER_SECONDS / 4))
        self.give_up_at = time.monotonic() + settings.RUN_TIME_LIMIT_SECONDS + 120
        self.waiting = 0  # waits for a person in progress (the loop's thread sets it, this one reads it)
        self.stopped = threading.Event()

    @contextlib.contextmanager
    def waiting_for_person(self) -> Iterator[None]:
        """While the loop waits for a person it is not hung, however long the wait: the heartbeat keeps beating, and
        the time spent counts neither toward the run's limit nor toward giving up here."""
        started = time.monotonic()
        self.waiting += 1
        try:
            yield
        finally:
            self.give_up_at += time.monotonic() - started
            self.waiting -= 1

    def alive(self) -> bool:
        return self.waiting > 0 or time.monotonic() < self.give_up_at

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval) and self.alive():
                try:
                    if not lifecycle.heartbeat(self.run_row, self.handovers):
                        self.superseded = True
                        return
                except Exception:
                    log.warning("heartbeat of %s failed", self.run_row.public_id, exc_info=True)
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self.stopped.set()


class AgentLoop:
    """Owns one running run: asks the model, runs its browser actions, enforces the spec's limits, and ends the run."""

    def __init__(
        self,
        run: Run,
        host_factory: Callable[[], BrowserHost],
        evaluator: evaluation.OutcomeEvaluator[Any] | None = None,
        *,
        worker: str = "",
        continued: bool = False,
        resumption: checkpoint.Resumption | None = None,
    ) -> None:
        self.run = run
        self.host_factory = host_factory
        # A run continued from another worker (runs.handover): from its last checkpoint, or from the start without one.
        self.worker = worker or run.worker
        self.continued = continued
        self.resumption = resumption
        self.handovers = run.handovers  # what this worker claimed the run under: its writes are fenced by it
        self.checkpointed_messages = 0  # the conversation's length at the last checkpoint taken
        self.evaluator: evaluation.OutcomeEvaluator[Any] = evaluator or OutcomeGrader()
        self.profile = model_profile(run.model)
        self.model_max_tokens = self.profile.max_tokens if self.profile is not None else None
        self.max_tokens = settings.MODEL_MAX_TOKENS
        if self.model_max_tokens is not None:
            self.max_tokens = min(self.max_tokens, self.model_max_tokens)
        self.pauses = 0
        # Set by open_browser: the worker's browser host, this run's context with its toolset, its network policy.
        self._host: BrowserHost | None = None
        self._toolset: PlaywrightBrowserToolset | None = None
        self._guard: NetworkGuard | None = None
        # What notices at once that the browser is lost (runtime.browser.recovery), and how often the run recovered.
        self._watch: LossWatch | None = None
        self._open_context: Callable[[dict[str, Any] | None], None] | None = None
        self.recoveries = 0
        # The run's browser state as last read on its lane after an action turn (in this worker's memory only, like
        # the run's secrets): what a fresh browser starts from when Chromium exits.
        self.saved_state: dict[str, Any] | None = None
        # Each such read is in the run's trace, as every call's result is: its values are masked there like the
        # starting and final state's ({value: what the trace shows}, tracing.state_values).
        self.saved_state_values: dict[str, str] = {}
        self.state_stale = False
        self.last_url = ""  # the agent's tab's URL after its last step (a dead browser's tabs are gone with it)
        self.live: live_view.LiveView | None = None  # streams only while an operator watches
        # The run's files: those it was given (on this worker, for file_upload) and its downloads (runtime.files).
        self.given_files: list[files.GivenFile] = []
        self.downloads: RunDownloads | None = None
        self.control: control.InputDispatcher | None = None  # a person's input while they have control
        self.heartbeat: Heartbeat | None = None
        self.started_clean = False  # the stored browser state was refused: nothing is written back over it
        self.start_state: dict[str, Any] | None = None
        self.closing_state: dict[str, Any] | None = None
        self.trace_kept = False
        self.left = False  # ended, or left to another worker
        # Seconds spent waiting for a person (answers, pauses): they never count toward RUN_TIME_LIMIT_SECONDS.
        self.waited = 0.0
        self.answer_names: set[str] = set()  # the run's secrets that are answers to ask_human
        self.schema = run.session.output_schema or None
        self.started = time.monotonic()
        self.messages: list[dict[str, Any]] = []
        self.replies = 0
        # The phase, the action and failure budgets and the verdict turn, with the signals they give.
        self.verdict = Verdict(run.max_turns)
        self.final_view: dict[str, Any] | None = None
        self.browser_failed = False
        self.final_view_fresh = False
        self.tracker = notices.NoticeTracker(run.max_turns)
        # What is sent of the conversation (runtime.context) and what the last request cost (cost caps).
        self.context_state = context.ContextState()
        self.result_labels: dict[str, str] = {}
        self.last_request: spending.LastRequest | None = None
        self.sent_tokens = 0
        self.cache_kept = False
        # What the model does not wait for goes to the run's lane (runtime.record): the turn's record (the request
        # that produced it, its events, the signals) in one transaction, and the live-view screenshot.
        self.record = TurnRecord(
            run,
            handovers=self.handovers,
            signals=self.signals,
            live_view_image=self.live_view_image,
            browser_state=lambda: self.saved_state,
        )

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

    # --- the run as a whole -----------------------------------------------------------------------------

    def execute(self) -> None:
        self.heartbeat = heartbeat = Heartbeat(self.run, self.handovers)
        heartbeat.start()
        drain.hold(self.run, self.handovers, self.worker)
        ending: Ending | None = None
        try:
            ending = self.until_ending()
        except HandOver as handing:
            self.leave(handing.cause)
        else:
            self.end(ending)
        finally:
            drain.release(self.run)
            heartbeat.stop()
            if ending is None and not self.left:
                self.end(Ending.failed("", "The worker stopped the run before it ended."))

    def until_ending(self) -> Ending:
        """Open the browser (where the run's last checkpoint left it, for a continued run) and converse to an ending;
        HandOver passes through."""
        try:
            if self.resumption is not None:
                checkpoint.restore(self, self.resumption)
            self.open_browser()
            return self.converse()
        except HandOver:
            raise
        except LaneFailed as error:
            if isinstance(error.__cause__, NotThisWorkers):
                raise HandOver(None) from error
            return self.unexpected(error)
        except Stop as stop:
            return stop.ending
        except ModelUnavailable as error:
            return Ending.failed(Run.ErrorCode.MODEL_ERROR, f"The model could not answer: {error}")
        except BrowserCrashed as error:
            self.browser_failed = True
            return Ending.failed(Run.ErrorCode.BROWSER_ERROR, str(error))
        except Exception as error:
            return self.unexpected(error)

    def end(self, ending: Ending) -> None:
        self.left = True
        try:
            self.close_browser()
        finally:
            if self.heartbeat is not None:
                self.heartbeat.stop()
            self.record.close()  # every event is committed before the run's ending (and the judge reads them)
            ended = lifecycle.finish(
                self.run,
                ending.status,
                success=ending.success,
                output=ending.output,
                data=ending.data,
                error_code=ending.error_code,
                error_message=ending.message,
                signals=self.signals(),
                handovers=self.handovers,
            )
            log.info(
                "run %s ended %s %s%s",
                self.run.public_id,
                ending.status,
                ending.error_code,
                "" if ended else " (not recorded: it had ended, or is another worker's)",
            )

    def leave(self, cause: str | None) -> None:
        """Leave the run to another worker: the last turn's record and checkpoint committed, the run handed over (when
        it is still this worker's to give), the browser closed without writing its state anywhere (the worker that
        continues starts from the checkpoint's). No trace is kept: the continuing worker's is the run's."""
        self.left = True
        try:
            self.record.close()
            if cause is not None:
                handover.hand_over(self.run, handovers=self.handovers, cause=cause, worker=self.worker)
                log.warning("run %s handed over (%s)", self.run.public_id, cause)
            else:
                log.warning("run %s was continued by another worker; this one leaves it", self.run.public_id)
        finally:
            self.trace_kept = True
            for stream in (self.live, self.control):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        stream.stop()
            if self._toolset is not None:
                with contextlib.suppress(Exception):
                    self.browser(
                        self.closed(), doing="close the context", timeout=BROWSER_SETUP_TIMEOUT_SECONDS, watched=False
                    )
            files.remove_run_directory(self.run)

    def unexpected(self, error: Exception) -> Ending:
        if isinstance(error, PlaywrightError):
            log.warning("run %s: browser error", self.run.public_id, exc_info=error)
            return Ending.failed(Run.ErrorCode.BROWSER_ERROR, f"The browser failed: {first_line(error)}")
        log.error("run %s: the runtime failed", self.run.public_id, exc_info=error)
        return Ending.failed(
            "", f"The runtime failed unexpectedly ({type(error).__name__}); the worker's log has the details."
        )

    def elapsed(self) -> float:
        """Seconds the run has been going (on earlier workers too), less its waits for a person."""
        return time.monotonic() - self.started - self.waited

    def safe_point(self) -> None:
        """Between steps: stop for an operator's cancel or the wall-clock limit, or leave a run another worker took."""
        if self.heartbeat is not None and self.heartbeat.superseded:
            raise HandOver(None)
        turns = self.verdict.turns
        if lifecycle.cancel_requested(self.run):
            raise Stop(
                Ending(
                    Run.Status.CANCELLED,
                    Run.ErrorCode.CANCELLED,
                    f"Cancelled by an operator after {turns} action turn{'s' if turns != 1 else ''}.",
                )
            )
        limit = settings.RUN_TIME_LIMIT_SECONDS
        if self.elapsed() > limit:
            raise Stop(
                Ending.failed(
                    Run.ErrorCode.TIMEOUT,
                    f"The run exceeded its time limit of {limit} s after {turns} action turns.",
                )
            )

    # --- the browser ------------------------------------------------------------------------------------

    def browser_timeout(self) -> float:
        return settings.BROWSER_ACTION_TIMEOUT_SECONDS + BROWSER_CALL_MARGIN_SECONDS

    def browser(
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
            timeout=timeout or self.browser_timeout(),
            doing=doing,
            crashed=crashed,
            watch=self._watch if watched else None,
        )

    def upstream_dialer(self) -> UpstreamDialer | None:
        """The run's own upstream proxy (its session's), unsealed in this worker's memory; None: out directly. A
        session whose proxy was deleted, or cannot be opened here, fails rather than go out without it."""
        proxy = self.run.session.proxy
        if proxy is None:
            return None
        try:
            upstream = open_proxy(proxy)
        except (ProxyGone, SecretsUnavailable) as error:
            raise Stop(
                Ending.failed(Run.ErrorCode.BROWSER_ERROR, f"The run's proxy cannot be used: {first_line(error)}")
            ) from None
        return UpstreamDialer(upstream, timeout=settings.PROXY_CONNECT_TIMEOUT_SECONDS, policy=proxy_policy())

    def open_browser(self) -> None:
        upstream = self.upstream_dialer()
        self._host = host = self.host_factory()
        run = self.run
        guard = NetworkGuard(
            allowed_private_hosts=settings.BROWSER_ALLOWED_PRIVATE_HOSTS,
            allowed_domains=run.allowed_domains or None,
        )

        def store(png: bytes) -> str:
            return save_screenshot(run.public_id, png)

        upload_dir, self.given_files = files.prepare_uploads(run)
        self.downloads = RunDownloads(
            files.keeper(run),
            max_bytes=settings.RUN_DOWNLOAD_MAX_BYTES,
            max_files=settings.RUN_DOWNLOAD_MAX_FILES,
        )

        async def build(storage_state: dict[str, Any] | None) -> tuple[PlaywrightBrowserToolset, LossWatch]:
            context = await host.new_context(
                storage_state=storage_state,
                network_guard=guard,
                upstream=upstream,
                viewport=(
                    run.viewport_width or settings.BROWSER_VIEWPORT_WIDTH,
                    run.viewport_height or settings.BROWSER_VIEWPORT_HEIGHT,
                ),
                accept_downloads=True,
            )
            toolset = PlaywrightBrowserToolset(
                context=context,
                on_screenshot=store,
                network_guard=guard,
                allow_javascript=run.allow_javascript,
                secrets=run.secrets,
                secret_domains=run.secret_domains,
                downloads=self.downloads,
                upload_dir=str(upload_dir) if upload_dir is not None else None,
            )
            await toolset.install_guard()
            return toolset, LossWatch(context)

        self._guard = guard
        resumed = self.resumption
        try:
            # a continued run starts from the state saved with its last checkpoint, when one was read by then
            state = resumed.browser_state if resumed is not None else None
            if state is None:
                state = profile_state.starting_state(run)
            self.start_state = state
        except SecretsUnavailable as error:
            raise Stop(Ending.failed("", str(error))) from None

        def open_context(storage_state: dict[str, Any] | None) -> None:
            self._toolset, self._watch = self.browser(
                build(storage_state),
                doing="open a context",
                timeout=BROWSER_SETUP_TIMEOUT_SECONDS,
                crashed=lambda error: f"The browser could not be started: {error}",
                watched=False,
            )

        self._open_context = open_context
        try:
            open_context(state)
        except BrowserCrashed:
            raise
        except Exception as error:
            if state is None:
                raise BrowserCrashed(f"The browser could not be started: {first_line(error)}") from error
            # a saved state Chromium refuses should not cost the run: start from a clean context instead
            log.warning("run %s: the session's browser state was refused; starting clean", run.public_id)
            self.started_clean = True
            open_context(None)
        self.saved_state = None if self.started_clean else state
        self.live = live_view.attach(host, self.toolset, run.public_id)
        # the page of the run's current toolset: a fresh browser's too
        self.control = control.attach(host, run.public_id, lambda: self.toolset.active_page())

        problem = ""
        url = resumed.url if resumed is not None else run.start_url
        if url and url != "about:blank":
            self.safe_point()
            try:
                self.browser(
                    self.toolset.open(url),
                    doing="open the start URL" if resumed is None else "reopen the page",
                    crashed=lambda error: f"The browser crashed opening the start URL: {error}",
                )
            except BrowserCrashed:
                raise
            except Exception as error:
                problem = error_text(error)
        # The run's replay trace, from the agent's first action (a trace's DOM snapshot of a page that hangs
        # would hang the start URL's load with it)
        self.browser(
            tracing.start(self.toolset.context, run.public_id),
            doing="start the run's trace",
            timeout=BROWSER_SETUP_TIMEOUT_SECONDS,
        )
        self.last_url = self.current_url()
        self.report_blocked()
        if self.continued:
            handover.recovered_event(
                run, worker=self.worker, from_turn=resumed.turn if resumed is not None else 0, cause=self.cause()
            )
        if resumed is not None:
            self.tell_restarted(prompts.worker_restarted(resumed.cause, self.last_url or url, problem))
            return
        first = [text_block(prompts.task_message(run.task, run.start_url, problem))]
        if self.given_files:
            first.append(text_block(files.given_files_text(self.given_files)))
        self.add_user(first)

    def cause(self) -> str:
        return self.resumption.cause if self.resumption is not None else handover.why_handed_over(self.run)

    def tell_restarted(self, notice: str) -> None:
        """A continued run's notice, after the results its conversation ends with (or in a user message of its own
        after a paused assistant turn)."""
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"].append(text_block(notice))
        else:
            self.add_user([text_block(notice)])

    def report_blocked(self) -> None:
        """Each refusal of the network policy since the last report (the route's or the egress proxy's), for the
        operator as a `network.blocked` event."""
        for blocked in self.guard.take_unreported():
            self.record.event(
                "network.blocked", {"url": blocked.url, "reason": blocked.reason, "proxy": blocked.by_proxy}
            )
        for failure in self.guard.take_proxy_failures():
            # the proxy's address only: its credentials never leave the worker's memory
            self.record.event(
                "network.proxy_error",
                {"proxy": failure.proxy, "reason": failure.reason, "destination": failure.destination},
            )

    def browse(self, use: BetaToolUseBlock) -> tuple[dict[str, Any], str | None]:
        """One browser member call through the SDK pipeline: its tool_result block and a screenshot URL if it took one."""
        self.toolset.last_screenshot_url = None
        if self.live is not None:
            self.live.note_action(use.name, use.input)  # the live view's cursor mark
        crashed = f"The browser crashed or disconnected during a {use.name} action."
        try:
            with metrics.step_duration.time():
                block = self.browser(
                    self.toolset.tool_result(use), doing=f"finish a {use.name} action", crashed=crashed
                )
            self.final_view_fresh = False
            self.report_blocked()
            self.report_downloads(cast(dict[str, Any], block))
            # a member reports its failure in its result: with the browser gone, that failure is a crash
            crashed_if_gone(self.host, failed=bool(block.get("is_error")), message=crashed, watch=self._watch)
        except BrowserCrashed as crash:
            url, problem = self.recover(crash)  # or raised again: a hang, or one loss too many
            self.final_view_fresh = False
            return result_block(
                use, prompts.browser_restarted(use.name, str(crash.cause), url, problem), is_error=True
            ), None
        self.state_stale = True
        self.last_url = self.current_url()
        self.note_step(use, cast(dict[str, Any], block))
        # A page may echo a secret the agent typed: the model sees the placeholder again.
        return mask(block, self.run.secrets), self.toolset.last_screenshot_url

    def note_step(self, use: BetaToolUseBlock, block: dict[str, Any]) -> None:
        """An action that worked: what it acted on and the page it left, as an `agent.target` event, from which a
        recipe is made later (runs.recipes)."""
        step = self.toolset.take_step()
        if step is not None and not block.get("is_error"):
            self.record.event("agent.target", mask({"tool_use_id": use.id, **step}, self.run.secrets))

    def recover(self, crash: BrowserCrashed) -> tuple[str, str]:
        """A tab that crashed or a browser that exited is not the agent's failure: the run goes on in a fresh tab of
        the same context (a renderer crash leaves the context and its cookies) or in a fresh browser started from the
        run's last saved state (Chromium exited: the host relaunches it on the next context), at the URL it was on,
        with a `browser.restarted` event. Returns the URL it is at now and why it could not reopen its own, or "".

        A hang (no cause) or a loss past RUN_MAX_RECOVERIES is raised again: the run ends browser_error."""
        if crash.cause is None:
            raise crash
        limit = settings.RUN_MAX_RECOVERIES
        if self.recoveries >= limit:
            raise BrowserCrashed(
                f"{crash} The run's browser had already been restarted {self.recoveries} "
                f"time{'s' if self.recoveries != 1 else ''}, its limit (RUN_MAX_RECOVERIES={limit})."
            ) from crash
        self.recoveries += 1
        url = crash.url or self.current_url() or self.last_url
        cause = crash.cause
        log.warning("run %s: %s recovering (%d of %d)", self.run.public_id, crash, self.recoveries, limit)
        # a renderer crash leaves the context, unless Chromium went with it
        problem = self.fresh_tab(url) if cause == RENDERER_CRASH and self.host.is_connected else None
        if problem is None:
            problem = self.fresh_browser(crash, url)
        now = self.current_url() or url
        self.record.event("browser.restarted", {"cause": crash.cause, "url": now, "recovery": self.recoveries})
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
            return self.browser(replace(), doing="open a fresh tab", watched=False)
        except Exception as error:
            log.warning("run %s: no fresh tab (%s); starting a fresh browser", self.run.public_id, first_line(error))
            return None

    def fresh_browser(self, crash: BrowserCrashed, url: str) -> str:
        """Chromium exited: a fresh context from the run's last saved state (on a relaunched Chromium, which every run
        on this host shares; each run recovers itself), with the network guard, downloads, live view, person control
        and a new trace (the dead context's trace is lost with it). Returns why `url` did not open, or ""."""
        old, open_context = self.toolset, self._open_context
        if open_context is None:
            raise crash
        with contextlib.suppress(Exception):
            self.browser(
                old.close(), doing="close the lost context", timeout=BROWSER_SETUP_TIMEOUT_SECONDS, watched=False
            )
        try:
            try:
                open_context(self.saved_state)
            except Exception:
                # Runs sharing this host recover at once: one may be handed the Chromium that is still going down
                # ("has been closed"); the host relaunches on the next context, so once more.
                log.info("run %s: the fresh context failed; once more on a relaunched browser", self.run.public_id)
                open_context(self.saved_state)
        except Exception as error:
            raise BrowserCrashed(f"{crash} A fresh browser could not be started: {first_line(error)}") from error
        if self.live is not None:
            self.live.follow(self.toolset)
        self.browser(
            tracing.start(self.toolset.context, self.run.public_id),
            doing="start the run's trace",
            timeout=BROWSER_SETUP_TIMEOUT_SECONDS,
        )
        if not url or url == "about:blank":
            return ""
        try:
            self.browser(self.toolset.open(url), doing="reopen the page", crashed=lambda error: f"{crash} {error}")
        except BrowserCrashed:
            raise
        except Exception as error:
            return error_text(error)
        return ""

    def current_url(self) -> str:
        """The URL of the agent's tab, as the driver last knew it (a dead tab keeps its last URL)."""
        page = self._toolset.active_page() if self._toolset is not None else None
        return page.url if page is not None else ""

    def read_state_if_stale(self) -> None:
        """After an action turn (or a person's control), the browser's state is read on the lane, before the turn's
        checkpoint is written: what a fresh browser, or another worker, starts from."""
        if self.state_stale:
            self.state_stale = False
            self.record.also(self.keep_state)

    def keep_state(self) -> None:
        """On the lane, after an action turn: read the run's storage state (cookies, local storage, IndexedDB) into
        this worker's memory, what a fresh browser starts from if Chromium exits. Never raises: a state that cannot be
        read now leaves the last one."""
        started = time.perf_counter()
        try:
            state = self.browser(
                self.toolset.storage_state(), doing="give its storage state", timeout=STATE_READ_SECONDS
            )
        except Exception as error:
            log.info("run %s: browser state not kept: %s", self.run.public_id, first_line(error))
            return
        self.saved_state = state
        self.saved_state_values |= tracing.state_values(state)
        log.debug("run %s: browser state kept in %.1f ms", self.run.public_id, (time.perf_counter() - started) * 1000)

    def report_downloads(self, block: dict[str, Any] | None) -> None:
        """What the run's browser downloaded since the last call: a `file.downloaded` event each (and its webhook),
        and, in the call's result, a line per file kept or refused."""
        downloads = self.downloads
        if downloads is None:
            return
        for kept in downloads.take_kept():
            # with the turn's record, after the call that caused it (a lifecycle event: its webhook follows)
            self.record.event(
                "file.downloaded",
                {"id": kept["id"], "name": kept["name"], "size": kept["size"], "sha256": kept["sha256"]},
            )
        notes = downloads.take_notes()
        if notes and block is not None:
            add_notices(block, notes)

    def observe(self) -> str | None:
        """After an action turn: the page's fingerprint, for stagnation notices. It hashes the turn's last read_page
        or find snapshot when there is one (the toolset's last_snapshot), so a turn that read costs no second one."""
        try:
            fingerprint = self.browser(self.toolset.page_fingerprint(), doing="answer")
        except BrowserCrashed:
            raise
        except Exception as error:
            log.info("run %s: could not observe the page: %s", self.run.public_id, first_line(error))
            return None
        return fingerprint

    def capture_final_view(self) -> dict[str, Any] | None:
        """The page as the agent last saw it (url, title, bounded text, viewport screenshot URL), for the judge."""
        if self.final_view_fresh:
            return self.final_view
        if self._toolset is None or not self.host.is_connected:
            return self.final_view
        try:
            view = self.browser(self.toolset.final_view(), doing="give its final view")
        except Exception as error:
            log.info("run %s: no final view: %s", self.run.public_id, first_line(error))
            return self.final_view
        png = view.pop("screenshot_png", None)
        masked: dict[str, Any] = mask(view, self.run.secrets)  # the judge and the grader read it
        masked["screenshot_url"] = save_screenshot(self.run.public_id, png) if png else None
        self.final_view = masked
        self.final_view_fresh = True
        return masked

    def close_browser(self) -> None:
        """Record the final view, keep the session's cookies and storage for its follow-up runs and write them to
        the run's profile (unless it said save_profile false), close the context. A run whose browser failed writes
        nothing: its state may be half."""
        if self._toolset is None:
            files.remove_run_directory(self.run)
            return
        with contextlib.suppress(LaneFailed):  # (record.close reports it) no state read on the lane from here on
            self.record.flush()
        try:
            if self.browser_failed:
                # A hung page would hang each browser call again for its whole timeout: keep what the agent last
                # saw, if anything, and only close the context.
                if self.final_view is not None:
                    self.record.event("agent.final_view", self.final_view)
                return
            view = self.capture_final_view()
            if view is not None:
                self.record.event("agent.final_view", view)
            if self.downloads is not None and self.host.is_connected:
                # a download still arriving when the run ends is kept all the same (the agent is not told)
                self.browser(self.downloads.settle(), doing="finish its downloads")
                self.report_downloads(None)
            # The trace ends before the state is read: a trace records each call's result, and the storage state is
            # every cookie and stored value of the profile, which no trace may hold (it masks their values instead).
            self.keep_trace()
            state = self.final_state()
            if state is not None:
                profile_state.keep_session_state(self.run, state)
                if self.started_clean and self.run.profile_id is not None:
                    # Chromium refused the stored state: writing this one back would erase the profile's sign-in
                    self.record.event("profile.not_saved", {"reason": "the profile's state was refused at start"})
                else:
                    profile = profile_state.write_profile(self.run, state)
                    if profile is not None:
                        self.record.event("profile.saved", profile_state.saved_event(profile))
        except Exception:
            log.warning("run %s: could not save the browser state", self.run.public_id, exc_info=True)
        finally:
            self.keep_trace()
            try:
                self.browser(
                    self.closed(), doing="close the context", timeout=BROWSER_SETUP_TIMEOUT_SECONDS, watched=False
                )
            except Exception:
                log.warning("run %s: the browser context did not close cleanly", self.run.public_id, exc_info=True)
            files.remove_run_directory(self.run)

    async def closed(self) -> None:
        """Close the run's context; the loss watch then hears the close as the run's own."""
        if self._watch is not None:
            self._watch.closing = True
        await self.toolset.close()

    def final_state(self) -> dict[str, Any] | None:
        """The browser's storage state as the run leaves it (read once, after the trace stopped); None without a
        browser to ask."""
        if self.closing_state is None and self.host.is_connected and not self.browser_failed:
            self.closing_state = self.browser(
                self.toolset.storage_state(), doing="give its storage state", timeout=BROWSER_SETUP_TIMEOUT_SECONDS
            )
        return self.closing_state

    def keep_trace(self) -> None:
        """Stop the live view and keep the run's Playwright trace (secrets masked) before the context
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
            if self.host.is_connected and not self.browser_failed:
                tracing.finish(
                    self.host,
                    self.toolset.context,
                    self.run.public_id,
                    self.run.secrets,
                    state=lambda: self.saved_state_values | tracing.state_values(self.start_state, self.final_state()),
                )
        except Exception:
            log.warning("run %s: the trace was not kept", self.run.public_id, exc_info=True)

    # --- the conversation -------------------------------------------------------------------------------

    def take_checkpoint(self) -> checkpoint.Taken:
        """Where the run is now, before its next model request (runtime.checkpoint)."""
        taken = checkpoint.take(self, self.checkpointed_messages)
        self.checkpointed_messages = len(self.messages)
        return taken

    def add_user(self, content: list[dict[str, Any]]) -> None:
        self.messages.append({"role": "user", "content": content})

    def place_breakpoints(self) -> None:
        """Move the conversation's cache breakpoints to the last user messages (the API allows four in all)."""
        marked = 0
        for message in reversed(self.messages):
            if message["role"] != "user" or not message["content"]:
                continue
            last = message["content"][-1]
            if marked < MESSAGE_BREAKPOINTS:
                last["cache_control"] = EPHEMERAL
                marked += 1
            else:
                last.pop("cache_control", None)

    def request(self) -> dict[str, Any]:
        """The next Messages request. It never forces a tool: the verdict turn is asked for in a user message."""
        self.place_breakpoints()
        params: dict[str, Any] = {
            "model": self.run.model,
            "max_tokens": self.max_tokens,
            "system": [
                {
                    "type": "text",
                    "text": prompts.system_prompt(self.schema is not None) + prompt_section(self.launch_secrets()),
                    "cache_control": EPHEMERAL,
                }
            ],
            "tools": [
                self.toolset.to_dict(),
                prompts.done_tool(self.schema),
                extraction.extract_tool(),
                asking.human_tool(),
            ],
            "messages": self.messages,
        }
        self.fit_context(params)
        thinking = thinking_param(self.profile, self.run.thinking)
        if thinking is not None:
            params["thinking"] = thinking
        if self.run.effort:  # "" leaves the model's own default effort
            params["output_config"] = {"effort": self.run.effort}
        return params

    def fit_context(self, params: dict[str, Any]) -> None:
        """Send what fits the model's limits (runtime.context): the stored conversation stays whole, the request
        carries its trimmed form and the server-side context management the model offers."""
        profile = self.profile or context.DEFAULT_PROFILE
        overhead = size_of({"system": params["system"], "tools": params["tools"]})
        prepared = context.prepare(
            self.messages, profile, self.context_state, labels=self.result_labels, overhead=overhead
        )
        self.context_state = prepared.state
        params["messages"] = prepared.messages
        self.sent_tokens = prepared.size.tokens + overhead.tokens
        self.cache_kept = not prepared.dropped
        if prepared.dropped:
            self.record.event("context.cleared", prepared.dropped.as_event(self.replies + 1, self.sent_tokens))
        management = context.context_management(self.profile)
        if management is not None:
            params["context_management"] = management
            params["betas"] = context.betas_for(management)

    def converse(self) -> Ending:
        while True:
            self.safe_point()
            self.read_state_if_stale()
            self.attend()
            self.read_state_if_stale()  # a person who had control may have changed it (signed in, say)
            # the last turn is recorded while the model answers, with the checkpoint another worker would go on from
            self.record.hand_off(self.take_checkpoint())
            if drain.requested.is_set():
                raise HandOver(handover.DRAINED)
            params = self.request()
            ending = self.within_budget()
            if ending is not None:
                return ending
            sent = send_message(self.run, source="agent", **params)
            message = sent.message
            model, at = message.model or params["model"], timezone.now()
            compactions = [Answered("compaction", model, step, at) for step in compaction_iterations(message.usage)]
            self.record.reply(Answered("agent", model, message.usage, at, sent.span), compactions)
            self.replies += 1
            self.after_request(message)
            ending = self.on_reply(message)
            if ending is not None:
                return ending

    def within_budget(self) -> Ending | None:
        """Before a request: if it would cross the run's or the workspace's cost cap it is not sent; while this one
        fits but the next would not, this one is the verdict turn (reason budget), with a notice telling the agent."""
        room = spending.headroom(self.run)
        if room.left is None:
            return None
        cost = spending.estimate(
            self.run.model, estimated_tokens=self.sent_tokens, last=self.last_request, cache_kept=self.cache_kept
        )
        if not room.allows(3 * cost):
            # Near a cap the turn still on the lane must be counted: its request (at most about one more `cost`) is
            # billed when the lane writes it. Far from any cap the write stays off the critical path.
            self.record.flush()
            room = spending.headroom(self.run)
        if not room.allows(cost):
            return Ending.failed(
                Run.ErrorCode.COST_LIMIT,
                f"The next model request (about ${cost:.4f}) would cross {room.describe()}; it was not sent.",
            )
        pending_user = self.messages and self.messages[-1]["role"] == "user"
        if pending_user and not room.allows(2 * cost) and self.verdict.cost_cap_near():
            self.messages[-1]["content"].append(text_block(prompts.budget_verdict_notice(room.describe())))
        return None

    def after_request(self, message: BetaMessage) -> None:
        """What the reply tells the cost estimate, and the timeline when the server compacted the conversation."""
        usage = read_usage(message.usage)
        self.last_request = spending.LastRequest(
            prompt_tokens=usage.prompt, output_tokens=usage.output_tokens, estimated_tokens=self.sent_tokens
        )
        compacted = [block for block in message.content or [] if getattr(block, "type", "") == "compaction"]
        if compacted:
            before = sum(read_usage(item).input_tokens for item in compaction_iterations(message.usage))
            self.record.event(
                "context.compacted",
                {
                    "turn": self.replies,
                    "strategy": context.COMPACT,
                    "tokens_before": before,
                    "tokens_after": self.last_request.prompt_tokens,
                    "tokens_saved": max(before - self.last_request.prompt_tokens, 0),
                },
            )

    # --- the live view ---------------------------------------------------------------------------------------

    def live_view_image(self) -> str | None:
        """On the lane: the viewport as the turn left it, for people watching; its URL, or None."""
        try:
            image, extension = self.browser(
                self.toolset.viewport_image(settings.LIVE_VIEW_JPEG_QUALITY), doing="give the live-view image"
            )
        except Exception as error:  # the live view goes without this frame; the loop meets a dead browser itself
            log.info("run %s: no live-view image: %s", self.run.public_id, first_line(error))
            return None
        return save_screenshot(self.run.public_id, image, extension)

    def on_reply(self, message: BetaMessage) -> Ending | None:
        """One reply, by its stop_reason; the assistant turn is kept exactly as received (thinking blocks and their
        signatures included), since the API refuses a conversation whose earlier turns were altered."""
        stop_reason = message.stop_reason
        content = list(message.content or [])
        if stop_reason == "refusal":
            return self.refused(message, content)
        if stop_reason == "model_context_window_exceeded":
            return Ending.failed(
                Run.ErrorCode.MODEL_ERROR,
                f"The conversation outgrew {self.run.model}'s context window after {self.verdict.turns} action turns; "
                "the model could not answer further.",
            )
        blocks = [block.to_dict(mode="json") for block in content]
        if not any(block.get("type") != "text" or block.get("text") for block in blocks):
            return self.empty_reply()  # never stored: the API refuses an empty assistant message
        self.messages.append({"role": "assistant", "content": blocks})
        self.show_messages(content)
        uses = [block for block in content if block.type == "tool_use"]
        if stop_reason == "pause_turn" and not uses:
            self.pauses += 1
            if self.pauses > MAX_PAUSES:
                return Ending.failed(
                    Run.ErrorCode.MODEL_ERROR, f"The model paused its turn {MAX_PAUSES} times in a row."
                )
            return None  # the assistant turn goes back as it is, and the model continues it
        self.pauses = 0
        if stop_reason == "max_tokens":
            return self.truncated(uses)
        self.verdict.complete_reply()
        if self.verdict.phase is Phase.ACKNOWLEDGING:
            return self.acknowledged(uses)
        return self.answer(uses) if uses else self.prose()

    def show_messages(self, content: list[BetaContentBlock]) -> None:
        """Claude's text for the live timeline: its text blocks, and the progress text it writes between tool calls,
        which arrives in thinking blocks."""
        for block in content:
            if block.type == "text" and block.text.strip():
                self.record.event("agent.message", {"text": block.text, "turn": self.replies, "source": "text"})
            elif block.type == "thinking" and (block.thinking or "").strip():
                self.record.event("agent.message", {"text": block.thinking, "turn": self.replies, "source": "thinking"})

    def refused(self, message: BetaMessage, content: list[BetaContentBlock]) -> Ending:
        text = " ".join(block.text.strip() for block in content if block.type == "text" and block.text.strip())
        details = getattr(message, "stop_details", None)
        explanation = getattr(details, "explanation", None) or ""
        said = text or explanation or "no explanation was given"
        return Ending.failed(
            Run.ErrorCode.MODEL_REFUSED, mask(f"The model declined to continue the task: {said}", self.run.secrets)
        )

    def truncated(self, uses: list[BetaToolUseBlock]) -> Ending | None:
        """A reply cut off at max_tokens: none of its tool calls runs (the last one may be incomplete); the agent is
        told, and the next request may have a higher limit, up to the model's."""
        step = self.verdict.truncated(self.max_tokens)
        if step.ending is not None:
            return step.ending
        limit = self.max_tokens
        if self.model_max_tokens is not None:
            self.max_tokens = min(self.max_tokens * 2, self.model_max_tokens)
        results = []
        for use in uses:
            self.emit_tool_use(use)
            with telemetry.tool_call(use.name, use.id, use.toolset_name) as traced:
                block = result_block(use, prompts.NOT_EXECUTED_TRUNCATED, is_error=True)
                traced.answered(is_error=True, refused=True)
            self.emit_tool_result(use, block, [], None)
            results.append(block)
        self.add_user([*results, text_block(prompts.truncated_message(limit, self.max_tokens))])
        return None

    def empty_reply(self) -> Ending | None:
        """A reply with no content: answered once with a short nudge; the next one is treated as prose."""
        return self.follow(self.verdict.empty_reply())

    def prose(self) -> Ending | None:
        """A reply without any tool call: the agent is asked once, in a user message, to call done, and that request
        is the verdict turn; prose on a verdict turn ends the run."""
        return self.follow(self.verdict.prose())

    def emit_tool_use(self, use: BetaToolUseBlock) -> None:
        self.record.event("agent.tool_use", tool_use_event(use, self.replies))

    def emit_tool_result(
        self, use: BetaToolUseBlock, block: dict[str, Any], lines: list[str], screenshot_url: str | None
    ) -> dict[str, Any]:
        data = tool_result_event(use, block, lines, screenshot_url, self.replies)
        self.record.event("agent.tool_result", data)
        # How a placeholder names this result once it leaves what is sent; the timeline's agent.tool_result event
        # carries the same tool_use_id (its seq is only taken when the lane writes the turn).
        self.result_labels[use.id] = f"of {use.name} call {use.id}, turn {self.replies}"
        return data

    def answer(self, uses: list[BetaToolUseBlock]) -> Ending | None:
        """Answer every tool_use of one reply, then decide what the next request is."""
        replied_in = self.verdict.phase  # an extract refused at the cost cap starts the verdict turn within the reply
        calls = self.run_calls(uses, replied_in)
        lines = self.add_turn_notices(calls)
        self.emit_results(calls, lines)
        return self.decide_next(calls, replied_in)

    def run_calls(self, uses: list[BetaToolUseBlock], replied_in: Phase) -> ReplyCalls:
        """Run the reply's tool calls in order, each as the phase allows; a reply that ran an action is an action
        turn."""
        calls = ReplyCalls()
        for use in uses:
            self.emit_tool_use(use)
            with telemetry.tool_call(use.name, use.id, use.toolset_name) as traced:
                screenshot_url = None
                refused = True  # unless a branch below runs the call
                if calls.accepted is not None:
                    block = result_block(use, prompts.NOT_EXECUTED_AFTER_DONE, is_error=True)
                elif is_done(use):
                    refused = False
                    calls.done_called = True
                    block, calls.accepted = self.check_done(use)
                    self.verdict.call_answered(is_error=calls.accepted is None)
                    if calls.accepted is None:
                        self.verdict.done_refused(mask(content_text(block["content"]), self.run.secrets))
                elif replied_in is Phase.VERDICT_TURN:
                    block = result_block(use, prompts.VERDICT_REQUIRED, is_error=True)
                    self.verdict.call_answered(is_error=True)
                elif is_browser(use):
                    refused = calls.halted
                    block, screenshot_url = self.run_browser_call(use, calls)
                elif use.name == asking.HUMAN_TOOL and not use.toolset_name:
                    refused = False
                    block = self.ask_human(use)
                    self.verdict.call_answered(is_error=bool(block.get("is_error")))
                elif use.name == extraction.EXTRACT_TOOL and not use.toolset_name:
                    refused = False
                    block = self.extract(use)
                    calls.actions.append((use.name, use.input))
                    self.verdict.call_answered(is_error=bool(block.get("is_error")))
                else:
                    block = result_block(use, prompts.unknown_tool(use.name), is_error=True)
                    self.verdict.call_answered(is_error=True)
                traced.answered(is_error=bool(block.get("is_error")), refused=refused)
            calls.results.append(CallResult(use, block, screenshot_url))
        if calls.actions:
            self.verdict.action_turn()
        return calls

    def run_browser_call(self, use: BetaToolUseBlock, calls: ReplyCalls) -> tuple[dict[str, Any], str | None]:
        """One browser action, unless an earlier one of the reply failed (the page is not what the agent planned
        for)."""
        if calls.halted:
            return result_block(use, prompts.NOT_EXECUTED_AFTER_FAILED_ACTION, is_error=True), None
        self.safe_point()
        self.record.before_acting()
        block, screenshot_url = self.browse(use)
        calls.actions.append((use.name, use.input))
        calls.halted = bool(block.get("is_error"))
        calls.acted = calls.acted or (not calls.halted and use.name not in notices.READ_ONLY_MEMBERS)
        self.verdict.call_answered(is_error=calls.halted)
        return block, screenshot_url

    def add_turn_notices(self, calls: ReplyCalls) -> list[str]:
        """The turn's notices (runtime.notices), added to its last result; a reply whose done was accepted gets
        none."""
        if calls.accepted is not None:
            return []
        fingerprint = self.observe() if calls.actions else None
        lines = self.tracker.for_turn(
            actions=calls.actions,
            turns_used=self.verdict.turns_used,
            consecutive_errors=self.verdict.consecutive_errors,
            fingerprint=fingerprint,
            acted=calls.acted,
        )
        if lines:
            add_notices(calls.results[-1].block, lines)
        return lines

    def emit_results(self, calls: ReplyCalls, lines: list[str]) -> None:
        """Each call's agent.tool_result event, the notices with the last; an action turn that showed no image of the
        page has its last result carry the live-view image (taken on the lane, before the next action: see
        before_acting)."""
        wants_live_view = calls.accepted is None and bool(calls.actions) and not calls.showed_page()
        for index, result in enumerate(calls.results):
            last = index == len(calls.results) - 1
            data = self.emit_tool_result(result.use, result.block, lines if last else [], result.screenshot_url)
            if last and wants_live_view:
                self.record.live_view_for = data

    def decide_next(self, calls: ReplyCalls, replied_in: Phase) -> Ending | None:
        """After the results: the verdict phase decides (runtime.verdict) whether the run ends, an accepted done is
        graded, or the results go back to the model, with the verdict turn asked for when a limit was reached."""
        step = self.verdict.after_results(
            acted=bool(calls.actions), accepted=calls.accepted, done_called=calls.done_called, replied_in=replied_in
        )
        return self.follow(step, [result.block for result in calls.results])

    def follow(self, step: Next, blocks: list[dict[str, Any]] | None = None) -> Ending | None:
        """Do what the verdict phase decided: end the run, or send the results (and its message for the agent) in the
        next user message, grading an accepted done first."""
        if step.ending is not None:
            return step.ending
        content = list(blocks or [])
        if step.message is not None:
            content.append(text_block(step.message))
        if content:
            self.add_user(content)
        if step.grade is not None:
            return self.grade(step.grade)
        return None

    def extract(self, use: BetaToolUseBlock) -> dict[str, Any]:
        """The extract tool: the current page's full text read by a separate model request (source extraction)
        that returns only the answer; over the cost cap it is refused and the verdict turn comes instead."""
        self.safe_point()
        problem = extraction.input_problem(use.input)
        if problem is not None:
            return result_block(use, problem, is_error=True)
        try:
            text, url = self.browser(extraction.page_text_and_url(self.toolset), doing="give the page's text")
        except BrowserCrashed as crash:
            now, problem = self.recover(crash)  # or raised again, as in browse
            return result_block(use, prompts.browser_restarted(use.name, str(crash.cause), now, problem), is_error=True)
        model = extraction.extraction_model(self.run)
        room = spending.headroom(self.run)
        if room.left is not None:
            cost = spending.estimate(
                model,
                estimated_tokens=size_of(text).tokens + extraction.PROMPT_OVERHEAD_TOKENS,
                last=None,
                cache_kept=False,
            )
            if not room.allows(
                cost
                + spending.estimate(
                    self.run.model, estimated_tokens=self.sent_tokens, last=self.last_request, cache_kept=True
                )
            ):
                self.verdict.extract_refused_at_cost_cap()
                return result_block(
                    use, prompts.budget_verdict_notice(room.describe(), refused="extract"), is_error=True
                )
        try:
            answer = extraction.extract(self.run, use.input, text, url)
        except ModelUnavailable as error:
            return result_block(use, prompts.extraction_failed(error), is_error=True)
        return result_block(use, answer.text, is_error=answer.is_error)

    def check_done(self, use: BetaToolUseBlock) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Validate a done call under the run's output_schema (runtime.calls)."""
        return check_done(use, self.schema)

    def grade(self, done: dict[str, Any]) -> Ending | None:
        """An accepted done ends the run, unless the run's outcome sends the agent back to revise its work."""
        evaluator = self.evaluator
        if not evaluator.has_outcome(self.run):
            return Ending.verdict(done)
        view = self.capture_final_view()
        self.record.hand_off()
        self.record.flush()  # the grader reads the run's record, and its span events come after the turn's
        evaluation = evaluator.evaluate(self.run, self.verdict.iteration, view, done=done)
        result = evaluation.result
        if result == "interrupted":
            self.safe_point()  # the cancel that interrupted it ends the run as cancelled
        ending = self.verdict.graded(result)
        if result == "needs_revision":
            # a fresh action-turn budget in the same browser context
            self.messages[-1]["content"].append(text_block(evaluator.revision_message(evaluation)))
            self.tracker.reset_budget()
        elif result == "max_iterations_reached":
            self.messages[-1]["content"].append(text_block(evaluator.acknowledgment_message(evaluation)))
        return ending

    def acknowledged(self, uses: list[BetaToolUseBlock]) -> Ending:
        """The one final turn after max_iterations_reached: a valid done replaces the last one; nothing else runs."""
        results = []
        for use in uses:
            self.emit_tool_use(use)
            with telemetry.tool_call(use.name, use.id, use.toolset_name) as traced:
                if is_done(use):
                    block, accepted = self.check_done(use)
                    self.verdict.acknowledged(accepted)
                else:
                    block = result_block(use, prompts.NOT_EXECUTED_ACKNOWLEDGING, is_error=True)
                traced.answered(is_error=bool(block.get("is_error")), refused=not is_done(use))
            results.append((use, block))
        for use, block in results:
            self.emit_tool_result(use, block, [], None)
        return self.verdict.last_verdict()

    # --- a person in the loop (runs.human) -------------------------------------------------------------------

    @contextlib.contextmanager
    def waiting_for_person(self) -> Iterator[None]:
        """A wait for a person: it never counts toward the run's time limit, and the heartbeat goes on throughout."""
        started = time.monotonic()
        try:
            with self.heartbeat.waiting_for_person() if self.heartbeat is not None else contextlib.nullcontext():
                yield
        finally:
            self.waited += time.monotonic() - started

    def stop_if_cancelled(self) -> None:
        if lifecycle.cancel_requested(self.run):
            self.safe_point()  # raises Stop as cancelled

    def ask_human(self, use: BetaToolUseBlock) -> dict[str, Any]:
        """The ask_human tool: the question goes to the operator and the agent waits, the run heartbeating, until
        they answer or RUN_INPUT_TIMEOUT_SECONDS pass. The answer is the tool's result; a secret answer becomes one
        of the run's secrets, so the model sees only its placeholder and every record masks its value."""
        problem = asking.question_problem(use.input, human.QUESTION_MAX_CHARS)
        if problem is not None:
            return result_block(use, problem, is_error=True)
        question = str(use.input["question"])
        secret = bool(use.input.get("secret", False))
        self.record.hand_off()
        self.record.flush()  # the turn's tool_use comes before the question in the run's events
        asked = human.ask(self.run, question, secret=secret)
        timeout = settings.RUN_INPUT_TIMEOUT_SECONDS
        started = time.monotonic()
        waiter = asking.Waiter(self.run.public_id)
        with self.waiting_for_person():
            while (answer := human.answer_of(asked)) is None:
                self.stop_if_cancelled()
                left = timeout - (time.monotonic() - started)
                if left <= 0 and human.time_out(self.run, asked):
                    return result_block(use, asking.not_answered(timeout))
                waiter.wait(max(left, asking.WAKE_POLL_SECONDS))
        if not secret:
            return result_block(use, asking.answered(answer))
        # ANSWER_1, ANSWER_2...: the first free name (a launch's own secret may hold one)
        names = (human.SECRET_ANSWER_NAME.format(index) for index in itertools.count(len(self.answer_names) + 1))
        name = next(candidate for candidate in names if candidate not in self.run.secrets)
        # in this worker's memory only, as the run's own secrets are: the toolset types it, every record masks it
        self.run.secrets[name] = answer
        self.answer_names.add(name)
        self.toolset.secrets[name] = answer
        return result_block(use, asking.answered_secretly(placeholder(name)))

    def launch_secrets(self) -> dict[str, str]:
        """The secrets the system prompt names: the launch's. A secret answer is explained in its tool result, so the
        system prompt (and the prompt cache that starts with it) stays the same for the whole run."""
        return {name: value for name, value in self.run.secrets.items() if name not in self.answer_names}

    def attend(self) -> None:
        """Before each model request: wait while a person has control, then hand the agent what people queued for
        it (a steer, the note of a hand-back) as text after the tool results of its next user message."""
        if human.paused_since(self.run) is not None:
            self.wait_while_paused()
        deliveries = human.take_messages(self.run)
        if not deliveries:
            return
        texts = []
        for delivery in deliveries:
            if delivery.kind == RunMessage.Kind.TIMED_OUT:
                text = asking.resumed_after_timeout()
            elif delivery.kind == RunMessage.Kind.HANDBACK:
                text = asking.handed_back(delivery.sent_by, delivery.text)
            else:
                text = asking.steered(delivery.sent_by, delivery.text)
            texts.append(text_block(mask(text, self.run.secrets)))
            self.record.event(
                "agent.message_delivered", {"kind": delivery.kind, "text": delivery.text, "by": delivery.sent_by}
            )
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"].extend(texts)
        else:
            self.add_user(texts)

    def wait_while_paused(self) -> None:
        """No model request while paused; a pause longer than RUN_INPUT_TIMEOUT_SECONDS ends by itself. The person's
        input reaches the page only now: the agent's last turn is over, and until the hand-back it does nothing."""
        if self.control is not None:
            self.control.accepting.set()  # before the turn's record is written, which is what a viewer waits for
        self.state_stale = True  # from here a person may act on the page
        self.record.hand_off(self.take_checkpoint())
        self.record.flush()  # what the agent did before the pause is on the page for the person taking control
        waiter = asking.Waiter(self.run.public_id)
        try:
            with self.waiting_for_person():
                while (since := human.paused_since(self.run)) is not None:
                    self.stop_if_cancelled()
                    if drain.requested.is_set():
                        raise HandOver(handover.DRAINED)  # the pause goes on on the next worker
                    left = settings.RUN_INPUT_TIMEOUT_SECONDS - (timezone.now() - since).total_seconds()
                    if left <= 0:
                        human.end_pause(self.run, by=human.PAUSE_TIMED_OUT, note="")
                        return
                    waiter.wait(max(left, asking.WAKE_POLL_SECONDS))
        finally:
            if self.control is not None:
                self.control.accepting.clear()

    # --- signals --------------------------------------------------------------------------------------------

    def signals(self) -> dict[str, Any]:
        """The run's signals now: the verdict phase's, with the notice tracker's counters."""
        tracker = self.tracker
        return self.verdict.signals(
            budget_notices=tracker.budget_notices,
            loop_nudges=tracker.loop_nudges,
            stagnation_nudges=tracker.stagnation_nudges,
        ) | {"worker_losses": self.run.worker_losses}
