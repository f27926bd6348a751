"""The agent loop of one run: model turns, browser actions, the limits and the verdict turn, and how the run ends."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from runs import lifecycle
from runs.events import emit
from runs.models import Run, Session
from runs.screenshots import save_screenshot
from runs.secrets import mask, prompt_section

from . import notices, prompts
from .model import ModelUnavailable, create_message
from .schema import data_problems

log = logging.getLogger(__name__)

EPHEMERAL = {"type": "ephemeral"}
BROWSER_TOOLSET = "browser"
# The driver bounds each action itself (navigation 30 s, a wait 30 s); past this margin the browser is considered hung.
BROWSER_CALL_MARGIN_SECONDS = 20
BROWSER_SETUP_TIMEOUT_SECONDS = 60
# Breakpoints on the last user messages, so each request reads the previous one's prefix from the cache; with the
# system prompt's that makes three of the four the API allows.
MESSAGE_BREAKPOINTS = 2
# A done whose data violates the schema on the verdict turn gets this many more verdict requests to correct it.
VERDICT_CORRECTIONS = 2
EVENT_TEXT_MAX_CHARS = 20_000
NOT_EXECUTED_AFTER_DONE = "Not executed: done already ended the run in this turn."
NOT_EXECUTED_ACKNOWLEDGING = "Not executed: the evaluation budget is exhausted and the run is ending; only done counts."


@dataclass
class Ending:
    """How a run ends, as lifecycle.finish records it."""

    status: str
    error_code: str = ""
    message: str = ""
    success: bool | None = None
    output: str = ""
    data: Any = None

    @classmethod
    def failed(cls, error_code: str, message: str) -> Ending:
        return cls(Run.Status.FAILED, error_code, message)

    @classmethod
    def verdict(cls, done: dict) -> Ending:
        """The agent's verdict as it gave it: the platform does not verify it."""
        if done["success"]:
            return cls(Run.Status.SUCCEEDED, success=True, output=done["output"], data=done.get("data"))
        return cls(
            Run.Status.FAILED,
            Run.ErrorCode.TASK_FAILED,
            "The agent reported that it could not complete the task; its account is in output.",
            success=False,
            output=done["output"],
            data=done.get("data"),
        )


class Stop(Exception):
    """Raised at a safe point to end the run now (cancel, wall clock)."""

    def __init__(self, ending: Ending) -> None:
        super().__init__(ending.message)
        self.ending = ending


class BrowserCrashed(Exception):
    """The browser died or hung: not the agent's failure, and nothing more can be done in this run."""


class Heartbeat(threading.Thread):
    """Keeps the run's heartbeat fresh while the loop waits on the model or the browser, so the reaper fails only
    runs whose worker is really gone; it gives up past the run's time limit, so a hung loop is reaped after all."""

    def __init__(self, run: Run) -> None:
        super().__init__(name=f"heartbeat-{run.public_id}", daemon=True)
        self.run_row = run
        self.interval = max(1.0, min(10.0, settings.RUN_STALE_AFTER_SECONDS / 4))
        self.give_up_at = time.monotonic() + settings.RUN_TIME_LIMIT_SECONDS + 120
        self.stopped = threading.Event()

    def run(self) -> None:
        try:
            while not self.stopped.wait(self.interval) and time.monotonic() < self.give_up_at:
                try:
                    lifecycle.heartbeat(self.run_row)
                except Exception:
                    log.warning("heartbeat of %s failed", self.run_row.public_id, exc_info=True)
        finally:
            connection.close()  # this thread's own connection

    def stop(self) -> None:
        self.stopped.set()


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def content_text(content: Any) -> str:
    """The text a tool_result's content holds (images and the browser_state block left out)."""
    if isinstance(content, str):
        return content
    return "\n".join(block.get("text", "") for block in content or [] if block.get("type") == "text")


def active_url(content: Any) -> str | None:
    """The active tab's URL from the browser_state block the SDK appends to a member's result."""
    if isinstance(content, str):
        return None
    for block in content or []:
        if block.get("type") == "browser_state":
            for tab in block.get("tabs") or []:
                if tab.get("active"):
                    return tab.get("url")
    return None


def has_image(content: Any) -> bool:
    return not isinstance(content, str) and any(block.get("type") == "image" for block in content or [])


def error_text(error: Exception) -> str:
    content = getattr(error, "content", None)
    if content is None:
        return str(error)
    return content if isinstance(content, str) else content_text(content)


def result_block(use, text: str, *, is_error: bool = False) -> dict:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": use.id, "content": [text_block(text)]}
    if use.toolset_name:
        block["toolset_name"] = use.toolset_name  # the API rejects a member's result without it
    if is_error:
        block["is_error"] = True
    return block


def bounded(text: str, limit: int = EVENT_TEXT_MAX_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "\n[… truncated]"


class AgentLoop:
    """Owns one running run: asks the model, runs its browser actions, enforces the spec's limits, and ends the run."""

    def __init__(self, run: Run, host_factory: Callable[[], Any]) -> None:
        self.run = run
        self.host_factory = host_factory
        self.host = None
        self.toolset = None
        self.schema = run.session.output_schema or None
        self.started = time.monotonic()
        self.messages: list[dict] = []
        self.replies = 0
        self.turns = 0
        self.budget_start = 0
        self.consecutive_errors = 0
        self.verdict_forced = False
        self.verdict_corrections = 0
        self.awaiting_verdict = False
        self.asked_for_done = False
        self.acknowledging = False
        self.iteration = 0
        self.last_done: dict | None = None
        self.final_view: dict | None = None
        self.browser_failed = False
        self.final_view_fresh = False
        self.tracker = notices.NoticeTracker(run.max_turns)
        self.signals: dict[str, Any] = {
            "turns": 0,
            "max_turns": run.max_turns,
            "budget_notices": 0,
            "loop_nudges": 0,
            "stagnation_nudges": 0,
            "failures_max": False,
            "verdict_turn": "none",
            "verdict_followed": None,
        }

    # --- the run as a whole -----------------------------------------------------------------------------

    def execute(self) -> None:
        heartbeat = Heartbeat(self.run)
        heartbeat.start()
        ending: Ending | None = None
        try:
            self.open_browser()
            ending = self.converse()
        except Stop as stop:
            ending = stop.ending
        except ModelUnavailable as error:
            ending = Ending.failed(Run.ErrorCode.MODEL_ERROR, f"The model could not answer: {error}")
        except BrowserCrashed as error:
            self.browser_failed = True
            ending = Ending.failed(Run.ErrorCode.BROWSER_ERROR, str(error))
        except Exception as error:
            ending = self.unexpected(error)
        finally:
            if ending is None:
                ending = Ending.failed("", "The worker stopped the run before it ended.")
            try:
                self.close_browser()
            finally:
                heartbeat.stop()
                self.sync_signals()
                lifecycle.finish(
                    self.run,
                    ending.status,
                    success=ending.success,
                    output=ending.output,
                    data=ending.data,
                    error_code=ending.error_code,
                    error_message=ending.message,
                    signals=self.signals,
                )
                log.info("run %s ended %s %s", self.run.public_id, ending.status, ending.error_code)

    def unexpected(self, error: Exception) -> Ending:
        from playwright.async_api import Error as PlaywrightError

        if isinstance(error, PlaywrightError):
            log.warning("run %s: browser error", self.run.public_id, exc_info=True)
            return Ending.failed(Run.ErrorCode.BROWSER_ERROR, f"The browser failed: {first_line(error)}")
        log.exception("run %s: the runtime failed", self.run.public_id)
        return Ending.failed(
            "", f"The runtime failed unexpectedly ({type(error).__name__}); the worker's log has the details."
        )

    def safe_point(self) -> None:
        """Between steps: stop for an operator's cancel or the wall-clock limit."""
        if lifecycle.cancel_requested(self.run):
            raise Stop(
                Ending(
                    Run.Status.CANCELLED,
                    Run.ErrorCode.CANCELLED,
                    f"Cancelled by an operator after {self.turns} action turn{'s' if self.turns != 1 else ''}.",
                )
            )
        limit = settings.RUN_TIME_LIMIT_SECONDS
        if time.monotonic() - self.started > limit:
            raise Stop(
                Ending.failed(
                    Run.ErrorCode.TIMEOUT,
                    f"The run exceeded its time limit of {limit} s after {self.turns} action turns.",
                )
            )

    # --- the browser ------------------------------------------------------------------------------------

    def browser_timeout(self) -> float:
        return settings.BROWSER_ACTION_TIMEOUT_SECONDS + BROWSER_CALL_MARGIN_SECONDS

    def open_browser(self) -> None:
        from runs.agent import live_view, tracing  # issue 16: live view and replay trace
        from runs.agent.browser import PlaywrightBrowserToolset
        from runs.agent.network_guard import NetworkGuard

        self.host = self.host_factory()
        run = self.run
        guard = NetworkGuard(
            allowed_private_hosts=settings.BROWSER_ALLOWED_PRIVATE_HOSTS,
            allowed_domains=run.allowed_domains or None,
        )

        def store(png: bytes) -> str:
            return save_screenshot(run.public_id, png)

        async def build(storage_state):
            context = await self.host.new_context(storage_state=storage_state)
            toolset = PlaywrightBrowserToolset(
                context=context,
                on_screenshot=store,
                network_guard=guard,
                allow_javascript=run.allow_javascript,
                secrets=run.secrets,
            )
            await toolset.install_guard()
            return toolset

        state = run.session.browser_state or None
        try:
            self.toolset = self.host.run(build(state), timeout=BROWSER_SETUP_TIMEOUT_SECONDS)
        except TimeoutError:
            raise BrowserCrashed(
                f"The browser did not open a context within {BROWSER_SETUP_TIMEOUT_SECONDS} s."
            ) from None
        except Exception as error:
            if state is None or not self.host.is_connected:
                raise BrowserCrashed(f"The browser could not be started: {first_line(error)}") from error
            # a saved state Chromium refuses should not cost the run: start from a clean context instead
            log.warning("run %s: the session's browser state was refused; starting clean", run.public_id)
            self.toolset = self.host.run(build(None), timeout=BROWSER_SETUP_TIMEOUT_SECONDS)
        self.live = live_view.attach(self.host, self.toolset, run.public_id)  # issue 16: streams only while watched

        problem = ""
        if run.start_url:
            self.safe_point()
            try:
                self.host.run(self.toolset.open(run.start_url), timeout=self.browser_timeout())
            except TimeoutError:
                raise BrowserCrashed(
                    f"The browser did not open the start URL within {self.browser_timeout()} s."
                ) from None
            except Exception as error:
                if not self.host.is_connected:
                    raise BrowserCrashed(f"The browser crashed opening the start URL: {first_line(error)}") from error
                problem = error_text(error)
        # issue 16: the run's replay trace, from the agent's first action (a trace's DOM snapshot of a page that hangs
        # would hang the start URL's load with it)
        self.host.run(tracing.start(self.toolset.context, run.public_id), timeout=BROWSER_SETUP_TIMEOUT_SECONDS)
        self.add_user([text_block(prompts.task_message(run.task, run.start_url, problem))])

    def browse(self, use) -> tuple[dict, str | None]:
        """One browser member call through the SDK pipeline: its tool_result block and a screenshot URL if it took one."""
        self.toolset.last_screenshot_url = None
        if getattr(self, "live", None) is not None:
            self.live.note_action(use.name, use.input)  # issue 16: the live view's cursor mark
        try:
            block = self.host.run(self.toolset.tool_result(use), timeout=self.browser_timeout())
        except TimeoutError:
            raise BrowserCrashed(
                f"The browser did not finish a {use.name} action within {self.browser_timeout()} s."
            ) from None
        self.final_view_fresh = False
        if block.get("is_error") and not self.host.is_connected:
            raise BrowserCrashed(f"The browser crashed or disconnected during a {use.name} action.")
        # A page may echo a secret the agent typed: the model sees the placeholder again.
        return mask(block, self.run.secrets), self.toolset.last_screenshot_url

    def observe(self, screenshot: bool) -> tuple[str | None, str | None]:
        """After an action turn: the page's fingerprint (stagnation notices) and a viewport image for the live view."""
        toolset = self.toolset

        async def look():
            fingerprint = await toolset.page_fingerprint()
            png = None
            if screenshot:
                # The driver has no public accessor for the active tab; its final_view would also extract the text.
                page = await toolset._page(None)
                png = await page.screenshot(type="png")
            return fingerprint, png

        try:
            fingerprint, png = self.host.run(look(), timeout=self.browser_timeout())
        except TimeoutError:
            raise BrowserCrashed(f"The browser did not answer within {self.browser_timeout()} s.") from None
        except Exception as error:
            if not self.host.is_connected:
                raise BrowserCrashed("The browser crashed or disconnected.") from error
            log.info("run %s: could not observe the page: %s", self.run.public_id, first_line(error))
            return None, None
        return fingerprint, save_screenshot(self.run.public_id, png) if png else None

    def capture_final_view(self) -> dict | None:
        """The page as the agent last saw it (url, title, bounded text, viewport screenshot URL), for the judge."""
        if self.final_view_fresh:
            return self.final_view
        if self.toolset is None or not self.host.is_connected:
            return self.final_view
        try:
            view = self.host.run(self.toolset.final_view(), timeout=self.browser_timeout())
        except Exception as error:
            log.info("run %s: no final view: %s", self.run.public_id, first_line(error))
            return self.final_view
        png = view.pop("screenshot_png", None)
        view = mask(view, self.run.secrets)  # the judge and the grader read it
        view["screenshot_url"] = save_screenshot(self.run.public_id, png) if png else None
        self.final_view = view
        self.final_view_fresh = True
        return view

    def close_browser(self) -> None:
        """Record the final view, keep the session's cookies and storage for its follow-up runs, close the context."""
        if self.toolset is None:
            return
        try:
            if self.browser_failed:
                # A hung page would hang each browser call again for its whole timeout: keep what the agent last
                # saw, if anything, and only close the context.
                if self.final_view is not None:
                    emit(self.run, "agent.final_view", self.final_view)
                return
            view = self.capture_final_view()
            if view is not None:
                emit(self.run, "agent.final_view", view)
            if self.host.is_connected:
                state = self.host.run(self.toolset.storage_state(), timeout=BROWSER_SETUP_TIMEOUT_SECONDS)
                Session.objects.filter(pk=self.run.session_id).update(browser_state=state)
        except Exception:
            log.warning("run %s: could not save the browser state", self.run.public_id, exc_info=True)
        finally:
            self.keep_trace()  # issue 16
            try:
                self.host.run(self.toolset.close(), timeout=BROWSER_SETUP_TIMEOUT_SECONDS)
            except Exception:
                log.warning("run %s: the browser context did not close cleanly", self.run.public_id, exc_info=True)

    def keep_trace(self) -> None:
        """Issue 16: stop the live view and keep the run's Playwright trace (secrets masked) before the context
        closes; neither may cost the run its ending."""
        from runs.agent import tracing

        try:
            if getattr(self, "live", None) is not None:
                self.live.stop()
            # a hung page could hang the trace's stop too: a run the browser failed keeps no trace
            if self.host.is_connected and not self.browser_failed:
                tracing.finish(self.host, self.toolset.context, self.run.public_id, self.run.secrets)
        except Exception:
            log.warning("run %s: the trace was not kept", self.run.public_id, exc_info=True)

    # --- the conversation -------------------------------------------------------------------------------

    def add_user(self, content: list[dict]) -> None:
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

    def request(self) -> dict:
        self.place_breakpoints()
        params: dict[str, Any] = {
            "model": self.run.model,
            "max_tokens": settings.MODEL_MAX_TOKENS,
            "system": [
                {
                    "type": "text",
                    "text": prompts.system_prompt(self.schema is not None) + prompt_section(self.run.secrets),
                    "cache_control": EPHEMERAL,
                }
            ],
            "tools": [self.toolset.to_dict(), prompts.done_tool(self.schema)],
            "messages": self.messages,
        }
        if self.verdict_forced or self.acknowledging:
            # Forcing a tool rules out extended thinking, which this runtime does not enable.
            params["tool_choice"] = {"type": "tool", "name": prompts.DONE_TOOL}
        return params

    def converse(self) -> Ending:
        while True:
            self.safe_point()
            lifecycle.heartbeat(self.run)
            message = create_message(self.run, source="agent", **self.request())
            self.replies += 1
            content = list(message.content or [])
            self.messages.append({"role": "assistant", "content": [block.to_dict() for block in content]})
            for block in content:
                if block.type == "text" and block.text.strip():
                    emit(self.run, "agent.message", {"text": block.text, "turn": self.replies})
            uses = [block for block in content if block.type == "tool_use"]
            if self.acknowledging:
                return self.acknowledged(uses)
            ending = self.answer(uses) if uses else self.prose()
            if ending is not None:
                return ending

    def start_verdict_turn(self, reason: str) -> None:
        self.verdict_forced = True
        self.awaiting_verdict = True
        self.verdict_corrections = 0
        self.signals["verdict_turn"] = reason
        self.signals["verdict_followed"] = None

    def verdict_missed(self) -> Ending:
        self.signals["verdict_followed"] = False
        reason = self.signals["verdict_turn"]
        if reason == "cap":
            return Ending.failed(
                Run.ErrorCode.AGENT_LIMIT,
                f"The agent used its {self.run.max_turns} action turns and did not call done on its verdict turn.",
            )
        if reason == "failures":
            return Ending.failed(
                Run.ErrorCode.AGENT_LIMIT,
                f"{notices.FAILURE_LIMIT} tool calls failed in a row and the agent did not call done on its verdict "
                "turn.",
            )
        return Ending.failed(
            Run.ErrorCode.AGENT_INCOMPLETE,
            "The agent replied in prose without calling done, was asked once to call it, and did not call it on its "
            "verdict turn.",
        )

    def prose(self) -> Ending | None:
        """A reply without any tool call: asked once for done; the next prose reply brings the verdict turn."""
        if self.verdict_forced:
            return self.verdict_missed()
        if self.awaiting_verdict:
            self.signals["verdict_followed"] = False
        if not self.asked_for_done:
            self.asked_for_done = True
            self.awaiting_verdict = True
            self.signals["verdict_turn"] = "prose"
            self.signals["verdict_followed"] = None
            self.add_user([text_block(prompts.ASK_FOR_DONE)])
        else:
            self.start_verdict_turn("prose")
            self.add_user([text_block(prompts.VERDICT_NOW)])
        self.save_signals()
        return None

    def emit_tool_use(self, use) -> None:
        emit(
            self.run,
            "agent.tool_use",
            {"id": use.id, "name": use.name, "toolset": use.toolset_name, "input": use.input, "turn": self.replies},
        )

    def emit_tool_result(self, use, block: dict, lines: list[str], screenshot_url: str | None) -> None:
        emit(
            self.run,
            "agent.tool_result",
            {
                "tool_use_id": use.id,
                "name": use.name,
                "content": bounded(content_text(block["content"])),
                "notices": lines,
                "is_error": bool(block.get("is_error")),
                "screenshot_url": screenshot_url,
                "url": active_url(block["content"]),
                "turn": self.replies,
            },
        )

    def count_error(self, is_error: bool) -> None:
        self.consecutive_errors = self.consecutive_errors + 1 if is_error else 0

    def answer(self, uses: list) -> Ending | None:
        """Answer every tool_use of one reply, then decide what the next request is."""
        verdict_turn = self.verdict_forced
        results: list[tuple[Any, dict, str | None]] = []
        actions: list[tuple[str, dict]] = []
        accepted: dict | None = None
        done_called = False
        halted = False
        acted = False
        for use in uses:
            self.emit_tool_use(use)
            screenshot_url = None
            if accepted is not None:
                block = result_block(use, NOT_EXECUTED_AFTER_DONE, is_error=True)
            elif use.name == prompts.DONE_TOOL and not use.toolset_name:
                done_called = True
                block, accepted = self.check_done(use)
                self.count_error(accepted is None)
            elif verdict_turn:
                block = result_block(
                    use,
                    "verdict_required: this is the verdict turn; every tool but done is refused. Call done with your "
                    "verdict.",
                    is_error=True,
                )
                self.count_error(True)
            elif use.toolset_name == BROWSER_TOOLSET:
                if halted:
                    block = result_block(use, "Not executed: an earlier action in this turn failed.", is_error=True)
                else:
                    self.safe_point()
                    block, screenshot_url = self.browse(use)
                    actions.append((use.name, use.input))
                    halted = bool(block.get("is_error"))
                    acted = acted or (not halted and use.name not in notices.READ_ONLY_MEMBERS)
                    self.count_error(halted)
            else:
                block = result_block(
                    use, f"Unknown tool {use.name!r}: use the browser tools, or done to finish.", is_error=True
                )
                self.count_error(True)
            results.append((use, block, screenshot_url))

        if actions:
            self.turns += 1
        lines: list[str] = []
        if accepted is None:
            fingerprint = None
            if actions:
                shown = any(url for _, _, url in results) or any(has_image(b["content"]) for _, b, _ in results)
                fingerprint, viewport_url = self.observe(screenshot=not shown)
                if viewport_url:
                    last_use, last_block, _ = results[-1]
                    results[-1] = (last_use, last_block, viewport_url)
            lines = self.tracker.for_turn(
                actions=actions,
                turns_used=self.turns - self.budget_start,
                consecutive_errors=self.consecutive_errors,
                fingerprint=fingerprint,
                acted=acted,
            )
            if lines:
                last_block = results[-1][1]
                if isinstance(last_block["content"], str):
                    last_block["content"] = [text_block(last_block["content"])]
                last_block["content"].append(text_block("\n".join(lines)))
        for index, (use, block, screenshot_url) in enumerate(results):
            self.emit_tool_result(use, block, lines if index == len(results) - 1 else [], screenshot_url)
        blocks = [block for _, block, _ in results]

        if self.consecutive_errors >= notices.FAILURE_LIMIT:
            self.signals["failures_max"] = True
        if accepted is not None:
            if self.awaiting_verdict:
                self.signals["verdict_followed"] = True
                self.awaiting_verdict = False
            self.save_signals()
            self.add_user(blocks)
            return self.on_done(accepted)
        if verdict_turn:
            if done_called and self.verdict_corrections < VERDICT_CORRECTIONS:
                # a done with data the schema refused: the verdict turn goes on so the agent can correct it
                self.verdict_corrections += 1
                self.save_signals()
                self.add_user(blocks)
                return None
            self.save_signals()
            return self.verdict_missed()
        if self.awaiting_verdict and not done_called:
            self.signals["verdict_followed"] = False
            self.awaiting_verdict = False
        if actions and self.turns - self.budget_start >= self.run.max_turns:
            self.start_verdict_turn("cap")
        elif self.consecutive_errors >= notices.FAILURE_LIMIT:
            self.start_verdict_turn("failures")
        self.save_signals()
        self.add_user(blocks)
        return None

    def check_done(self, use) -> tuple[dict, dict | None]:
        """Validate a done call: its result block, and the accepted verdict or None."""
        given = use.input if isinstance(use.input, dict) else {}
        problems = []
        if not isinstance(given.get("success"), bool):
            problems.append("at $.success: success must be true or false")
        if not isinstance(given.get("output"), str):
            problems.append("at $.output: output must be a string")
        if problems:
            return result_block(use, "invalid_input:\n" + "\n".join(problems), is_error=True), None
        data = given.get("data")
        if self.schema is not None:
            violations = (
                ["at $: data is required by this run's output_schema"]
                if "data" not in given
                else data_problems(self.schema, data)
            )
        else:
            violations = data_problems({}, data) if data is not None else []
        if violations:
            return result_block(use, "output_schema_violation:\n" + "\n".join(violations), is_error=True), None
        done = {"success": given["success"], "output": given["output"], "data": data}
        return result_block(use, "Verdict recorded."), done

    def on_done(self, done: dict) -> Ending | None:
        """An accepted done ends the run, unless the run's outcome sends the agent back to revise its work."""
        self.last_done = done
        outcome = self.outcome()
        if outcome is None:
            return Ending.verdict(done)
        from judge import outcomes

        view = self.capture_final_view()
        evaluation = outcomes.evaluate(self.run, self.iteration, view, done=done)
        result = evaluation.result
        if result == "needs_revision":
            self.iteration += 1
            self.messages[-1]["content"].append(text_block(outcomes.revision_message(evaluation)))
            # a fresh action-turn budget in the same browser context
            self.budget_start = self.turns
            self.consecutive_errors = 0
            self.verdict_forced = False
            self.awaiting_verdict = False
            self.asked_for_done = False
            self.tracker.reset_budget()
            return None
        if result == "max_iterations_reached":
            self.acknowledging = True
            self.messages[-1]["content"].append(text_block(outcomes.acknowledgment_message(evaluation)))
            return None
        if result == "interrupted":
            self.safe_point()  # the cancel that interrupted it ends the run as cancelled
        return Ending.verdict(done)

    def acknowledged(self, uses: list) -> Ending:
        """The one final turn after max_iterations_reached: a valid done replaces the last one; nothing else runs."""
        results = []
        for use in uses:
            self.emit_tool_use(use)
            if use.name == prompts.DONE_TOOL and not use.toolset_name:
                block, accepted = self.check_done(use)
                if accepted is not None:
                    self.last_done = accepted
            else:
                block = result_block(use, NOT_EXECUTED_ACKNOWLEDGING, is_error=True)
            results.append((use, block))
        for use, block in results:
            self.emit_tool_result(use, block, [], None)
        return Ending.verdict(self.last_done)

    def outcome(self):
        from judge.models import Outcome

        return Outcome.objects.filter(run=self.run).first()

    # --- signals --------------------------------------------------------------------------------------------

    def sync_signals(self) -> None:
        self.signals.update(
            turns=self.turns,
            budget_notices=self.tracker.budget_notices,
            loop_nudges=self.tracker.loop_nudges,
            stagnation_nudges=self.tracker.stagnation_nudges,
        )

    def save_signals(self) -> None:
        """Written every turn, so the live page shows them."""
        self.sync_signals()
        Run.objects.filter(pk=self.run.pk).update(signals=self.signals)


def first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def execute_run(run_id: int, *, worker: str) -> None:
    """Claim the run and run its loop to an ending; a run already claimed, cancelled or finished is left alone."""
    run = Run.objects.select_related("session").filter(pk=run_id).first()
    if run is None:
        log.warning("execute_run: run %s does not exist", run_id)
        return
    if settings.SCRIPTED_MODEL:
        Run.objects.filter(pk=run.pk, status=Run.Status.QUEUED).update(scripted=True)
        run.scripted = True
    if not lifecycle.mark_started(run, worker):
        log.info("execute_run: run %s was already claimed or ended", run.public_id)
        return
    from .worker import browser_host

    AgentLoop(run, browser_host).execute()
