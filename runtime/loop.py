"""The agent loop of one run: model turns, browser actions, the limits and the verdict turn, and how the run ends."""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from anthropic.types.beta import BetaContentBlock, BetaMessage, BetaToolUseBlock
from django.conf import settings
from django.utils import timezone
from playwright.async_api import Error as PlaywrightError

from agent_platform import telemetry
from agent_platform.lib.money import rounded_usd
from agent_platform.lib.request_size import size_of
from agent_platform.lib.text import content_text, first_line
from agent_platform.llm import ModelUnavailable, model_profile, thinking_param
from judge.outcomes import OutcomeGrader
from runs import evaluation, handover, human, lifecycle, spending
from runs.models import Run, RunMessage
from runs.secrets import mask, placeholder, prompt_section
from runs.usage import Answered, compaction_iterations, read_usage, send_message
from runtime.browser.host import BrowserHost

from . import asking, checkpoint, context, drain, extraction, files, notices, prompts
from .browser_call import BrowserCrashed
from .calls import (
    CallResult,
    ReplyCalls,
    add_notices,
    check_done,
    is_browser,
    is_done,
    only_reads,
    result_block,
    text_block,
    tool_result_event,
    tool_use_event,
)
from .checkpoint import LoopState
from .heartbeats import Heartbeat
from .lane import LaneFailed
from .record import NotThisWorkers, TurnRecord
from .run_browser import BrowserRefused, RunBrowser
from .verdict import Ending, Next, Phase

log = logging.getLogger(__name__)

EPHEMERAL = {"type": "ephemeral"}
# Breakpoints on the last user messages, so each request reads the previous one's prefix from the cache; with the
# system prompt's that makes three of the four the API allows.
MESSAGE_BREAKPOINTS = 2
# A cancel is read at most this often: the safe points before each action of one reply come milliseconds apart (the
# first one of a reply, after a model request, always reads it).
CANCEL_CHECK_SECONDS = 0.2
# pause_turn replies in a row that are sent back to continue before the run gives up.
MAX_PAUSES = 5


def place_breakpoints(messages: list[dict[str, Any]]) -> None:
    """Move the conversation's cache breakpoints to the last user messages (the API allows four in all)."""
    marked = 0
    for message in reversed(messages):
        if message["role"] != "user" or not message["content"]:
            continue
        last = message["content"][-1]
        if marked < MESSAGE_BREAKPOINTS:
            last["cache_control"] = EPHEMERAL
            marked += 1
        else:
            last.pop("cache_control", None)


def refusal(message: BetaMessage, content: list[BetaContentBlock], secrets: dict[str, str]) -> Ending:
    """The ending of a run whose model declined to go on, with what it said."""
    text = " ".join(block.text.strip() for block in content if block.type == "text" and block.text.strip())
    details = getattr(message, "stop_details", None)
    explanation = getattr(details, "explanation", None) or ""
    said = text or explanation or "no explanation was given"
    return Ending.failed(Run.ErrorCode.MODEL_REFUSED, mask(f"The model declined to continue the task: {said}", secrets))


def unexpected(run: Run, error: Exception) -> Ending:
    """The ending of a run the runtime failed: a browser error, or its own (logged with the details)."""
    if isinstance(error, PlaywrightError):
        log.warning("run %s: browser error", run.public_id, exc_info=error)
        return Ending.failed(Run.ErrorCode.BROWSER_ERROR, f"The browser failed: {first_line(error)}")
    log.error("run %s: the runtime failed", run.public_id, exc_info=error)
    return Ending.failed(
        "", f"The runtime failed unexpectedly ({type(error).__name__}); the worker's log has the details."
    )


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


class AgentLoop:
    """Owns one running run: asks the model, runs its browser actions, enforces the spec's limits, and ends the run.
    Its browser is the run's RunBrowser (runtime.run_browser); what it remembers between turns, its LoopState
    (runtime.checkpoint)."""

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
        # A run continued from another worker (runs.handover): from its last checkpoint, or from the start without one.
        self.worker = worker or run.worker
        self.continued = continued
        self.resumption = resumption
        self.handovers = run.handovers  # what this worker claimed the run under: its writes are fenced by it
        self.checkpointed_messages = 0  # the conversation's length at the last checkpoint taken
        self.evaluator: evaluation.OutcomeEvaluator[Any] = evaluator or OutcomeGrader()
        self.profile = model_profile(run.model)
        self.model_max_tokens = self.profile.max_tokens if self.profile is not None else None
        max_tokens = settings.MODEL_MAX_TOKENS
        if self.model_max_tokens is not None:
            max_tokens = min(max_tokens, self.model_max_tokens)
        # What the loop remembers between turns, and what a handover carries: a continued run's, from its checkpoint.
        self.state = resumption.state if resumption is not None else LoopState.start(run.max_turns, max_tokens)
        # A secret answered to ask_human is one of the run's secrets again: typed by the toolset, masked everywhere.
        run.secrets.update(self.state.answers)
        self.browser = RunBrowser(
            run, host_factory, event=lambda type, data: self.record.event(type, data), progress=self.state.browser
        )
        self.heartbeat: Heartbeat | None = None
        self.left = False  # ended, or left to another worker
        # Seconds spent waiting for a person (answers, pauses): they never count toward RUN_TIME_LIMIT_SECONDS.
        self.waited = 0.0
        self.schema = run.session.output_schema or None
        self.started = time.monotonic() - self.state.elapsed_seconds  # a continued run's clock goes on
        self.cancel_checked_at = -CANCEL_CHECK_SECONDS
        # What the model does not wait for goes to the run's lane (runtime.record): the turn's record (the request
        # that produced it, its events, the signals) in one transaction, and the live-view screenshot.
        self.record = TurnRecord(
            run,
            handovers=self.handovers,
            signals=self.signals,
            live_view_image=self.browser.live_view_image,
            browser_state=lambda: self.browser.saved_state,
        )

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
            self.open_browser()
            return self.converse()
        except HandOver:
            raise
        except LaneFailed as error:
            if isinstance(error.__cause__, NotThisWorkers):
                raise HandOver(None) from error
            return unexpected(self.run, error)
        except Stop as stop:
            return stop.ending
        except BrowserRefused as refused:
            return Ending.failed(refused.error_code, str(refused))
        except ModelUnavailable as error:
            return Ending.failed(Run.ErrorCode.MODEL_ERROR, f"The model could not answer: {error}")
        except BrowserCrashed as error:
            self.browser.failed = True
            return Ending.failed(Run.ErrorCode.BROWSER_ERROR, str(error))
        except Exception as error:
            return unexpected(self.run, error)

    def end(self, ending: Ending) -> None:
        self.left = True
        try:
            with contextlib.suppress(LaneFailed):  # (record.close reports it) no state read on the lane from here on
                self.record.flush()
            self.browser.close()
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
            self.browser.discard()

    def elapsed(self) -> float:
        """Seconds the run has been going (on earlier workers too), less its waits for a person."""
        return time.monotonic() - self.started - self.waited

    def safe_point(self, *, cancelled: bool = False) -> None:
        """Between steps: stop for an operator's cancel or the wall-clock limit, or leave a run another worker took.
        The cancel is read from the database at most every CANCEL_CHECK_SECONDS (`cancelled`: it was just read)."""
        if self.heartbeat is not None and self.heartbeat.superseded:
            raise HandOver(None)
        turns = self.state.verdict.turns
        if not cancelled and time.monotonic() - self.cancel_checked_at >= CANCEL_CHECK_SECONDS:
            cancelled = lifecycle.cancel_requested(self.run)
            self.cancel_checked_at = time.monotonic()
        if cancelled:
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

    # --- the browser (runtime.run_browser) ----------------------------------------------------------------------

    def open_browser(self) -> None:
        """Open the run's browser (where its last checkpoint left it, for a continued run) at its start URL, and give
        the agent its first message, or a continued run its notice."""
        browser, run, resumed = self.browser, self.run, self.resumption
        browser.open(resumed.browser_state if resumed is not None else None)
        problem = ""
        url = resumed.state.browser.url if resumed is not None else run.start_url
        if url and url != "about:blank":
            self.safe_point()
            problem = browser.open_page(url, doing="open the start URL" if resumed is None else "reopen the page")
        browser.start_trace()
        browser.progress.url = browser.current_url()
        browser.report_blocked()
        if self.continued:
            cause = resumed.cause if resumed is not None else handover.why_handed_over(run)
            handover.recovered_event(
                run, worker=self.worker, from_turn=resumed.turn if resumed is not None else 0, cause=cause
            )
        if resumed is not None:
            # after the results the conversation ends with, or in a user message of its own after a paused turn
            notice = text_block(prompts.worker_restarted(resumed.cause, browser.progress.url or url, problem))
            if self.state.messages and self.state.messages[-1]["role"] == "user":
                self.state.messages[-1]["content"].append(notice)
            else:
                self.add_user([notice])
            return
        first = [text_block(prompts.task_message(run.task, run.start_url, problem))]
        if browser.given_files:
            first.append(text_block(files.given_files_text(browser.given_files)))
        self.add_user(first)

    def browse(self, use: BetaToolUseBlock, *, new_reply: bool) -> tuple[dict[str, Any], str | None]:
        """One browser member call through the SDK pipeline (`new_reply`: the reply's first): its tool_result block and
        a screenshot URL if it took one. A crashed tab or browser is recovered (or the crash raised again) and the
        agent told."""
        try:
            block = self.browser.act(use, new_reply=new_reply)
        except BrowserCrashed as crash:
            url, problem = self.browser.recover(crash)  # or raised again: a hang, or one loss too many
            return result_block(
                use, prompts.browser_restarted(use.name, str(crash.cause), url, problem), is_error=True
            ), None
        # A page may echo a secret the agent typed: the model sees the placeholder again.
        return mask(block, self.run.secrets), self.browser.toolset.last_screenshot_url

    def read_state_if_stale(self) -> None:
        """After an action turn (or a person's control), the browser's storage state is read on the lane, before the
        turn's checkpoint is written: what a fresh browser, or another worker, starts from."""
        read = self.browser.stale_state_read()
        if read is not None:
            self.record.also(read)

    # --- the conversation -------------------------------------------------------------------------------

    def take_checkpoint(self) -> checkpoint.Taken:
        """Where the run is now, before its next model request (runtime.checkpoint)."""
        self.state.elapsed_seconds = self.elapsed()
        taken = checkpoint.take(self.state, self.checkpointed_messages)
        self.checkpointed_messages = len(self.state.messages)
        return taken

    def add_user(self, content: list[dict[str, Any]]) -> None:
        self.state.messages.append({"role": "user", "content": content})

    def request(self) -> dict[str, Any]:
        """The next Messages request. It never forces a tool: the verdict turn is asked for in a user message."""
        place_breakpoints(self.state.messages)
        # The secrets the system prompt names are the launch's: a secret answer is explained in its tool result, so
        # the system prompt (and the prompt cache that starts with it) stays the same for the whole run.
        launch_secrets = {name: value for name, value in self.run.secrets.items() if name not in self.state.answers}
        params: dict[str, Any] = {
            "model": self.run.model,
            "max_tokens": self.state.max_tokens,
            "system": [
                {
                    "type": "text",
                    "text": prompts.system_prompt(self.schema is not None) + prompt_section(launch_secrets),
                    "cache_control": EPHEMERAL,
                }
            ],
            "tools": [
                self.browser.toolset.to_dict(),
                prompts.done_tool(self.schema),
                extraction.extract_tool(),
                asking.human_tool(),
            ],
            "messages": self.state.messages,
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
            self.state.messages, profile, self.state.context, labels=self.state.result_labels, overhead=overhead
        )
        self.state.context = prepared.state
        params["messages"] = prepared.messages
        self.state.sent_tokens = prepared.size.tokens + overhead.tokens
        self.state.cache_kept = not prepared.dropped
        if prepared.dropped:
            self.record.event(
                "context.cleared", prepared.dropped.as_event(self.state.replies + 1, self.state.sent_tokens)
            )
        management = context.context_management(self.profile)
        if management is not None:
            params["context_management"] = management
            params["betas"] = context.betas_for(management)

    def converse(self) -> Ending:
        while True:
            # one read a turn: a cancel, a pause, people's messages for the agent, the caps
            turn = lifecycle.before_request(self.run)
            self.cancel_checked_at = time.monotonic()
            self.safe_point(cancelled=turn.cancel_requested)
            self.read_state_if_stale()
            waited = self.attend(turn)
            self.read_state_if_stale()  # a person who had control may have changed it (signed in, say)
            # the last turn is recorded while the model answers, with the checkpoint another worker would go on from
            self.record.hand_off(self.take_checkpoint())
            if drain.requested.is_set():
                raise HandOver(handover.DRAINED)
            params = self.request()
            ending = self.within_budget(None if waited else turn.caps)  # a long pause: read them again
            if ending is not None:
                return ending
            sent = send_message(self.run, source="agent", **params)
            # A cancel requested while the model answered is read before its answer is acted on, however soon it came.
            self.cancel_checked_at = -CANCEL_CHECK_SECONDS
            message = sent.message
            model, at = message.model or params["model"], timezone.now()
            compactions = [Answered("compaction", model, step, at) for step in compaction_iterations(message.usage)]
            self.record.reply(Answered("agent", model, message.usage, at, sent.span), compactions)
            self.state.replies += 1
            self.after_request(message)
            ending = self.on_reply(message)
            if ending is not None:
                return ending

    def within_budget(self, caps: spending.Caps | None) -> Ending | None:
        """Before a request: if it would cross the run's or the workspace's cost cap it is not sent; while this one
        fits but the next would not, this one is the verdict turn (reason budget), with a notice telling the agent.
        `caps`: as read at the turn's start (None: read them now)."""
        room = spending.headroom(self.run, caps=caps)
        if room.left is None:
            return None
        cost = spending.estimate(
            self.run.model,
            estimated_tokens=self.state.sent_tokens,
            last=self.state.last_request,
            cache_kept=self.state.cache_kept,
        )
        if not room.allows(3 * cost):
            # Near a cap the turn still on the lane must be counted: its request (at most about one more `cost`) is
            # billed when the lane writes it. Far from any cap the write stays off the critical path.
            self.record.flush()
            room = spending.headroom(self.run)
        if not room.allows(cost):
            return Ending.failed(
                Run.ErrorCode.COST_LIMIT,
                f"The next model request (about {rounded_usd(cost)}) would cross {room.describe()}; it was not sent.",
            )
        pending_user = self.state.messages and self.state.messages[-1]["role"] == "user"
        if pending_user and not room.allows(2 * cost) and self.state.verdict.cost_cap_near():
            self.state.messages[-1]["content"].append(text_block(prompts.budget_verdict_notice(room.describe())))
        return None

    def after_request(self, message: BetaMessage) -> None:
        """What the reply tells the cost estimate, and the timeline when the server compacted the conversation."""
        usage = read_usage(message.usage)
        self.state.last_request = spending.LastRequest(
            prompt_tokens=usage.prompt, output_tokens=usage.output_tokens, estimated_tokens=self.state.sent_tokens
        )
        compacted = [block for block in message.content or [] if getattr(block, "type", "") == "compaction"]
        if compacted:
            before = sum(read_usage(item).input_tokens for item in compaction_iterations(message.usage))
            self.record.event(
                "context.compacted",
                {
                    "turn": self.state.replies,
                    "strategy": context.COMPACT,
                    "tokens_before": before,
                    "tokens_after": self.state.last_request.prompt_tokens,
                    "tokens_saved": max(before - self.state.last_request.prompt_tokens, 0),
                },
            )

    def on_reply(self, message: BetaMessage) -> Ending | None:
        """One reply, by its stop_reason; the assistant turn is kept exactly as received (thinking blocks and their
        signatures included), since the API refuses a conversation whose earlier turns were altered."""
        stop_reason = message.stop_reason
        content = list(message.content or [])
        if stop_reason == "refusal":
            return refusal(message, content, self.run.secrets)
        if stop_reason == "model_context_window_exceeded":
            return Ending.failed(
                Run.ErrorCode.MODEL_ERROR,
                f"The conversation outgrew {self.run.model}'s context window after {self.state.verdict.turns} action turns; "
                "the model could not answer further.",
            )
        blocks = [block.to_dict(mode="json") for block in content]
        if not any(block.get("type") != "text" or block.get("text") for block in blocks):
            return self.follow(
                self.state.verdict.empty_reply()
            )  # never stored: the API refuses an empty assistant message
        self.state.messages.append({"role": "assistant", "content": blocks})
        self.show_messages(content)
        uses = [block for block in content if block.type == "tool_use"]
        if stop_reason == "pause_turn" and not uses:
            self.state.pauses += 1
            if self.state.pauses > MAX_PAUSES:
                return Ending.failed(
                    Run.ErrorCode.MODEL_ERROR, f"The model paused its turn {MAX_PAUSES} times in a row."
                )
            return None  # the assistant turn goes back as it is, and the model continues it
        self.state.pauses = 0
        if stop_reason == "max_tokens":
            return self.truncated(uses)
        self.state.verdict.complete_reply()
        if self.state.verdict.phase is Phase.ACKNOWLEDGING:
            return self.acknowledged(uses)
        return self.answer(uses) if uses else self.follow(self.state.verdict.prose())

    def show_messages(self, content: list[BetaContentBlock]) -> None:
        """Claude's text for the live timeline: its text blocks, and the progress text it writes between tool calls,
        which arrives in thinking blocks."""
        for block in content:
            if block.type == "text" and block.text.strip():
                self.record.event("agent.message", {"text": block.text, "turn": self.state.replies, "source": "text"})
            elif block.type == "thinking" and (block.thinking or "").strip():
                self.record.event(
                    "agent.message", {"text": block.thinking, "turn": self.state.replies, "source": "thinking"}
                )

    def truncated(self, uses: list[BetaToolUseBlock]) -> Ending | None:
        """A reply cut off at max_tokens: none of its tool calls runs (the last one may be incomplete); the agent is
        told, and the next request may have a higher limit, up to the model's."""
        step = self.state.verdict.truncated(self.state.max_tokens)
        if step.ending is not None:
            return step.ending
        limit = self.state.max_tokens
        if self.model_max_tokens is not None:
            self.state.max_tokens = min(self.state.max_tokens * 2, self.model_max_tokens)
        results = []
        for use in uses:
            self.emit_tool_use(use)
            with telemetry.tool_call(use.name, use.id, use.toolset_name) as traced:
                block = result_block(use, prompts.NOT_EXECUTED_TRUNCATED, is_error=True)
                traced.answered(is_error=True, refused=True)
            self.emit_tool_result(use, block, [], None)
            results.append(block)
        self.add_user([*results, text_block(prompts.truncated_message(limit, self.state.max_tokens))])
        return None

    def emit_tool_use(self, use: BetaToolUseBlock) -> None:
        self.record.event("agent.tool_use", tool_use_event(use, self.state.replies))

    def emit_tool_result(
        self, use: BetaToolUseBlock, block: dict[str, Any], lines: list[str], screenshot_url: str | None
    ) -> dict[str, Any]:
        data = tool_result_event(use, block, lines, screenshot_url, self.state.replies)
        self.record.event("agent.tool_result", data)
        # How a placeholder names this result once it leaves what is sent; the timeline's agent.tool_result event
        # carries the same tool_use_id (its seq is only taken when the lane writes the turn).
        self.state.result_labels[use.id] = f"of {use.name} call {use.id}, turn {self.state.replies}"
        return data

    def answer(self, uses: list[BetaToolUseBlock]) -> Ending | None:
        """Answer every tool_use of one reply, then decide what the next request is."""
        replied_in = (
            self.state.verdict.phase
        )  # an extract refused at the cost cap starts the verdict turn within the reply
        calls = self.run_calls(uses, replied_in)
        lines = self.add_turn_notices(calls)
        self.emit_results(calls, lines)
        return self.decide_next(calls, replied_in)

    def run_calls(self, uses: list[BetaToolUseBlock], replied_in: Phase) -> ReplyCalls:
        """Run the reply's tool calls in order, each as the phase allows; a reply that ran an action is an action
        turn."""
        calls = ReplyCalls()
        for index, use in enumerate(uses):
            self.emit_tool_use(use)
            with telemetry.tool_call(use.name, use.id, use.toolset_name) as traced:
                screenshot_url = None
                refused = True  # unless a branch below runs the call
                if calls.accepted is not None:
                    block = result_block(use, prompts.NOT_EXECUTED_AFTER_DONE, is_error=True)
                elif is_done(use):
                    refused = False
                    calls.done_called = True
                    block, calls.accepted = check_done(use, self.schema)
                    self.state.verdict.call_answered(is_error=calls.accepted is None)
                    if calls.accepted is None:
                        self.state.verdict.done_refused(mask(content_text(block["content"]), self.run.secrets))
                elif replied_in is Phase.VERDICT_TURN:
                    block = result_block(use, prompts.VERDICT_REQUIRED, is_error=True)
                    self.state.verdict.call_answered(is_error=True)
                elif is_browser(use):
                    refused = calls.halted
                    block, screenshot_url = self.run_browser_call(use, calls)
                    self.begin_image_once_settled(use, calls, uses[index + 1 :])
                elif use.name == asking.HUMAN_TOOL and not use.toolset_name:
                    refused = False
                    block = self.ask_human(use)
                    self.state.verdict.call_answered(is_error=bool(block.get("is_error")))
                elif use.name == extraction.EXTRACT_TOOL and not use.toolset_name:
                    refused = False
                    block = self.extract(use)
                    calls.actions.append((use.name, use.input))
                    self.state.verdict.call_answered(is_error=bool(block.get("is_error")))
                else:
                    block = result_block(use, prompts.unknown_tool(use.name), is_error=True)
                    self.state.verdict.call_answered(is_error=True)
                traced.answered(is_error=bool(block.get("is_error")), refused=refused)
            calls.results.append(CallResult(use, block, screenshot_url))
        if calls.actions:
            self.state.verdict.action_turn()
        return calls

    def run_browser_call(self, use: BetaToolUseBlock, calls: ReplyCalls) -> tuple[dict[str, Any], str | None]:
        """One browser action, unless an earlier one of the reply failed (the page is not what the agent planned
        for)."""
        if calls.halted:
            return result_block(use, prompts.NOT_EXECUTED_AFTER_FAILED_ACTION, is_error=True), None
        self.safe_point()
        first = not self.record.acting  # the reply's first browser call
        self.record.before_acting()
        block, screenshot_url = self.browse(use, new_reply=first)
        calls.actions.append((use.name, use.input))
        calls.halted = bool(block.get("is_error"))
        calls.acted = calls.acted or (not calls.halted and use.name not in notices.READ_ONLY_MEMBERS)
        self.state.verdict.call_answered(is_error=calls.halted)
        return block, screenshot_url

    def begin_image_once_settled(self, use: BetaToolUseBlock, calls: ReplyCalls, rest: list[BetaToolUseBlock]) -> None:
        """After a reply's last action, when only reads of the page follow it (read_page after a click, the common
        reply) or nothing does: the live-view image and the storage-state read are begun now, while the reads and the
        turn's notices run, not after the turn's results. The page is the one the turn leaves either way."""
        if (
            calls.acted
            and not calls.halted
            and use.name not in notices.READ_ONLY_MEMBERS
            and only_reads(rest)
            and not calls.showed_page()
        ):
            self.browser.begin_live_view_image()
            self.browser.begin_state_read()
            calls.image_begun = True

    def add_turn_notices(self, calls: ReplyCalls) -> list[str]:
        """The turn's notices (runtime.notices), added to its last result; a reply whose done was accepted gets
        none."""
        if calls.accepted is not None:
            return []
        fingerprint = self.browser.fingerprint() if calls.actions else None
        lines = self.state.tracker.for_turn(
            actions=calls.actions,
            turns_used=self.state.verdict.turns_used,
            consecutive_errors=self.state.verdict.consecutive_errors,
            fingerprint=fingerprint,
            acted=calls.acted,
        )
        if lines:
            add_notices(calls.results[-1].block, lines)
        return lines

    def emit_results(self, calls: ReplyCalls, lines: list[str]) -> None:
        """Each call's agent.tool_result event, the notices with the last; an action turn that showed no image of the
        page has its last result carry the live-view image (begun now, saved on the lane, taken before the next
        action: see before_acting)."""
        wants_live_view = calls.accepted is None and bool(calls.actions) and not calls.showed_page()
        for index, result in enumerate(calls.results):
            last = index == len(calls.results) - 1
            data = self.emit_tool_result(result.use, result.block, lines if last else [], result.screenshot_url)
            if last and wants_live_view:
                if not calls.image_begun:
                    self.browser.begin_live_view_image()
                self.record.live_view_for = data

    def decide_next(self, calls: ReplyCalls, replied_in: Phase) -> Ending | None:
        """After the results: the verdict phase decides (runtime.verdict) whether the run ends, an accepted done is
        graded, or the results go back to the model, with the verdict turn asked for when a limit was reached."""
        step = self.state.verdict.after_results(
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
            text, url = self.browser.call(
                extraction.page_text_and_url(self.browser.toolset), doing="give the page's text"
            )
        except BrowserCrashed as crash:
            now, problem = self.browser.recover(crash)  # or raised again, as in browse
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
                    self.run.model,
                    estimated_tokens=self.state.sent_tokens,
                    last=self.state.last_request,
                    cache_kept=True,
                )
            ):
                self.state.verdict.extract_refused_at_cost_cap()
                return result_block(
                    use, prompts.budget_verdict_notice(room.describe(), refused="extract"), is_error=True
                )
        try:
            answer = extraction.extract(self.run, use.input, text, url)
        except ModelUnavailable as error:
            return result_block(use, prompts.extraction_failed(error), is_error=True)
        return result_block(use, answer.text, is_error=answer.is_error)

    def grade(self, done: dict[str, Any]) -> Ending | None:
        """An accepted done ends the run, unless the run's outcome sends the agent back to revise its work."""
        evaluator = self.evaluator
        if not evaluator.has_outcome(self.run):
            return Ending.verdict(done)
        view = self.browser.capture_final_view()
        self.record.hand_off()
        self.record.flush()  # the grader reads the run's record, and its span events come after the turn's
        evaluation = evaluator.evaluate(self.run, self.state.verdict.iteration, view, done=done)
        result = evaluation.result
        if result == "interrupted":
            # the cancel that interrupted it ends the run as cancelled
            self.safe_point(cancelled=lifecycle.cancel_requested(self.run))
        ending = self.state.verdict.graded(result)
        if result == "needs_revision":
            # a fresh action-turn budget in the same browser context
            self.state.messages[-1]["content"].append(text_block(evaluator.revision_message(evaluation)))
            self.state.tracker.reset_budget()
        elif result == "max_iterations_reached":
            self.state.messages[-1]["content"].append(text_block(evaluator.acknowledgment_message(evaluation)))
        return ending

    def acknowledged(self, uses: list[BetaToolUseBlock]) -> Ending:
        """The one final turn after max_iterations_reached: a valid done replaces the last one; nothing else runs."""
        results = []
        for use in uses:
            self.emit_tool_use(use)
            with telemetry.tool_call(use.name, use.id, use.toolset_name) as traced:
                if is_done(use):
                    block, accepted = check_done(use, self.schema)
                    self.state.verdict.acknowledged(accepted)
                else:
                    block = result_block(use, prompts.NOT_EXECUTED_ACKNOWLEDGING, is_error=True)
                traced.answered(is_error=bool(block.get("is_error")), refused=not is_done(use))
            results.append((use, block))
        for use, block in results:
            self.emit_tool_result(use, block, [], None)
        return self.state.verdict.last_verdict()

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

    @contextlib.contextmanager
    def page_in_persons_hands(self) -> Iterator[None]:
        """While the agent waits on its question it does nothing with the page: a person who takes control meanwhile
        drives it (the question waits), and what they changed is read back as after an action turn."""
        control = self.browser.control
        if control is None:
            yield
            return
        applied = control.applied
        control.accepting.set()
        try:
            yield
        finally:
            control.accepting.clear()
            if control.applied != applied:
                self.browser.stale = True

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
        with self.waiting_for_person(), self.page_in_persons_hands():
            while (answer := human.answer_of(asked)) is None:
                if lifecycle.cancel_requested(self.run):
                    self.safe_point(cancelled=True)  # raises Stop
                left = timeout - (time.monotonic() - started)
                if left <= 0 and human.time_out(self.run, asked):
                    return result_block(use, asking.not_answered(timeout))
                waiter.wait(max(left, asking.WAKE_POLL_SECONDS))
        if not secret:
            return result_block(use, asking.answered(answer))
        # ANSWER_1, ANSWER_2...: the first free name (a launch's own secret may hold one)
        names = (human.SECRET_ANSWER_NAME.format(index) for index in itertools.count(len(self.state.answers) + 1))
        name = next(candidate for candidate in names if candidate not in self.run.secrets)
        # in this worker's memory only, as the run's own secrets are: the toolset types it, every record masks it
        self.run.secrets[name] = answer
        self.state.answers[name] = answer
        self.browser.toolset.secrets[name] = answer
        return result_block(use, asking.answered_secretly(placeholder(name)))

    def attend(self, turn: lifecycle.Turn) -> bool:
        """Before each model request: wait while a person has control, then hand the agent what people queued for
        it (a steer, the note of a hand-back) as text after the tool results of its next user message. `turn`: what
        was read of the run at the turn's start. Returns whether it waited for a person."""
        waited = turn.paused
        if waited:
            self.wait_while_paused()
        # a hand-back queues its note as the pause ends
        deliveries = human.take_messages(self.run) if waited or turn.messages_queued else []
        if not deliveries:
            return waited
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
        if self.state.messages and self.state.messages[-1]["role"] == "user":
            self.state.messages[-1]["content"].extend(texts)
        else:
            self.add_user(texts)
        return waited

    def wait_while_paused(self) -> None:
        """No model request while paused; a pause longer than RUN_INPUT_TIMEOUT_SECONDS ends by itself. The person's
        input reaches the page only now: the agent's last turn is over, and until the hand-back it does nothing."""
        if self.browser.control is not None:
            self.browser.control.accepting.set()  # before the turn's record is written, which is what a viewer waits for
        self.browser.stale = True  # from here a person may act on the page
        self.record.hand_off(self.take_checkpoint())
        self.record.flush()  # what the agent did before the pause is on the page for the person taking control
        waiter = asking.Waiter(self.run.public_id)
        try:
            with self.waiting_for_person():
                while (since := human.paused_since(self.run)) is not None:
                    if lifecycle.cancel_requested(self.run):
                        self.safe_point(cancelled=True)  # raises Stop
                    if drain.requested.is_set():
                        raise HandOver(handover.DRAINED)  # the pause goes on on the next worker
                    left = settings.RUN_INPUT_TIMEOUT_SECONDS - (timezone.now() - since).total_seconds()
                    if left <= 0:
                        human.end_pause(self.run, by=human.PAUSE_TIMED_OUT, note="")
                        return
                    waiter.wait(max(left, asking.WAKE_POLL_SECONDS))
        finally:
            if self.browser.control is not None:
                self.browser.control.accepting.clear()

    # --- signals --------------------------------------------------------------------------------------------

    def signals(self) -> dict[str, Any]:
        """The run's signals now: the verdict phase's, with the notice tracker's counters."""
        tracker = self.state.tracker
        return self.state.verdict.signals(
            budget_notices=tracker.budget_notices,
            loop_nudges=tracker.loop_nudges,
            stagnation_nudges=tracker.stagnation_nudges,
        ) | {"worker_losses": self.run.worker_losses}
