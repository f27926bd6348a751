"""What a worker process does around its runs: its one BrowserHost and warm start (made ready before the first run,
closed at shutdown), and executing a run: claim it, unseal its secrets, run its loop.

Celery imports this module when a worker starts (agent_platform.celery autodiscovers `runtime.worker`), which connects
the signals below; the web process never imports it."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import anthropic
import httpx2 as httpx
from celery import bootsteps
from celery.signals import (
    worker_init,
    worker_process_init,
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)
from django.conf import settings
from django.urls import reverse
from opentelemetry.trace import StatusCode

from agent_platform import db, metrics, telemetry
from agent_platform.celery import app
from agent_platform.checks import check_object_storage
from agent_platform.llm import client
from runs import handover, lifecycle
from runs.events import pusher
from runs.models import Run
from runs.recipes.models import Replay
from runs.secret_box import SecretsUnavailable, unseal
from runtime import checkpoint, drain
from runtime.browser.host import BrowserHost
from runtime.browser.reaper import reap_orphans
from runtime.loop import AgentLoop
from runtime.prompts import done_tool
from runtime.replay import ReplayLoop
from runtime.sign_in import SignInSession

log = logging.getLogger(__name__)

_lock = threading.Lock()
_host: BrowserHost | None = None


def browser_host() -> BrowserHost:
    """The process's shared host; runs on the worker's threads share its Chromium, one BrowserContext each."""
    global _host
    with _lock:
        if _host is None:
            _host = BrowserHost(settings.BROWSER_EXECUTABLE, pid_dir=settings.BROWSER_PID_DIR)
        return _host


def close_browser_host(**_signal_kwargs: object) -> None:
    """Close Chromium and the host's loop thread; a later run starts a fresh host."""
    global _host
    with _lock:
        host, _host = _host, None
    if host is None:
        return
    try:
        host.close()
    except Exception:
        log.warning("the browser host did not close cleanly", exc_info=True)


WARM_UP_BROWSER_TIMEOUT_SECONDS = 60
# A reply of the shape a run's first request gets, parsed once so the SDK builds its response models at start.
WARM_UP_REPLY = {
    "id": "msg_warm_up",
    "type": "message",
    "role": "assistant",
    "model": "warm-up",
    "content": [
        {"type": "text", "text": "Warming up."},
        {"type": "tool_use", "id": "toolu_warm_up", "name": "navigate", "input": {"url": "about:blank"}},
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
}


def warm_up(**_signal_kwargs: object) -> None:
    """Pay at process start what a worker's first run would otherwise pay in its first step (about a second).

    The URLconf and the API import on the first `reverse()` (a screenshot URL); the SDK builds its request and
    response models on its first call (made here through an in-memory transport: nothing leaves the process); the
    shared client loads its CA bundle once; the live-push loop starts; Chromium launches. Nothing here is needed for correctness: a failure is
    logged and the first run pays for what was left.
    """
    started = time.monotonic()
    try:
        reverse("runs:screenshot", args=["run_warm_up", f"{'0' * 32}.png"])

        def answer(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=json.dumps(WARM_UP_REPLY).encode())

        with httpx.Client(transport=httpx.MockTransport(answer)) as transport_client:
            offline = anthropic.Anthropic(
                api_key="warm-up", base_url="http://warm-up.invalid", http_client=transport_client
            )
            message = offline.beta.messages.create(
                model="warm-up",
                max_tokens=16,
                system=[{"type": "text", "text": "Warm up.", "cache_control": {"type": "ephemeral"}}],
                tools=[done_tool(None)],
                messages=[{"role": "user", "content": [{"type": "text", "text": "Warm up."}]}],
            )
            [block.to_dict() for block in message.content]
        client()
        pusher.send([])  # starts the process's push loop (and its thread) now, not on a run's first event
        host = browser_host()
        host.run(host.start(), timeout=WARM_UP_BROWSER_TIMEOUT_SECONDS)
    except Exception:
        log.warning("warming the worker up failed; its first run pays for what was left", exc_info=True)
        return
    log.info("worker warmed up in %.2f s", time.monotonic() - started)


def warm_up_when_ready(sender: object = None, **_signal_kwargs: object) -> None:
    """A threads-pool worker (ours) runs tasks in its main process, which is ready here and has not yet fetched a
    task; a prefork parent runs none (its children warm up in worker_process_init, after the fork)."""
    if "prefork" in type(getattr(sender, "pool", None)).__module__:
        return
    warm_up()


def reap_orphan_browsers(**_signal_kwargs: object) -> None:
    """On start: kill the Chromium processes that workers killed on this machine left behind (browser_reaper)."""
    try:
        reap_orphans(settings.BROWSER_PID_DIR)
    except Exception:
        log.warning("could not clean up the browsers of earlier workers", exc_info=True)


def refuse_unusable_storage(**_signal_kwargs: object) -> None:
    """A worker writes screenshots, traces and downloads: one whose object storage cannot work (the start-up checks
    a web process runs; a Celery worker runs none of Django's) does not start, rather than fail its first run."""
    errors = [problem for problem in check_object_storage() if problem.is_serious()]
    for problem in errors:
        log.error("%s: %s (%s)", problem.id, problem.msg, problem.hint)
    if errors:
        raise SystemExit(
            f"The worker does not start: {errors[0].msg}"
        )  # not an Exception: Celery's signal lets it pass


def serve_metrics(**_signal_kwargs: object) -> None:
    """This process's metrics on WORKER_METRICS_PORT (agent_platform.metrics), for a scraper on any machine."""
    metrics.start_worker_endpoint()


class BrokerReconnected(bootsteps.StartStopStep):  # type: ignore[misc]  # celery ships no type information
    """A step of the worker's consumer, which Celery starts again each time the consumer reconnects to the broker
    (after a lost connection it restarts every consumer step), so `start` runs once the broker is back: the moment
    to send again what a restarted Redis lost, rather than RUN_QUEUED_REDELIVER_SECONDS later. Celery has no signal
    for a reconnection (worker_ready is sent once per process)."""

    requires = {"celery.worker.consumer.connection:Connection"}

    def start(self, parent: object) -> None:
        """Redeliver the admitted runs if the broker restarted (one worker of all does, agent_platform.broker), and
        admit the runs whose message could not be sent while it was away (runs.lifecycle.enqueue)."""
        try:
            redelivered = lifecycle.redeliver_after_broker_restart()
            lifecycle.admit_waiting_runs()
        except Exception:
            # Never stop the consumer over this: the reaper redelivers and admits on its own passes.
            log.warning("reconciling queued runs with the broker failed", exc_info=True)
            return
        finally:
            db.release()  # the consumer's thread lives as long as the worker: it keeps no connection
        if redelivered:
            log.warning("the broker restarted: %s queued runs enqueued again", len(redelivered))


app.steps["consumer"].add(BrokerReconnected)

worker_init.connect(refuse_unusable_storage, weak=False)
# The dead workers' browsers go before this worker launches its own.
worker_ready.connect(reap_orphan_browsers, weak=False)
worker_ready.connect(serve_metrics, weak=False)
worker_ready.connect(warm_up_when_ready, weak=False)
worker_process_init.connect(warm_up, weak=False)

# --pool threads runs tasks in the main process (worker_shutdown); a prefork child has its own host to close.
worker_shutdown.connect(close_browser_host, weak=False)
# SIGTERM: runs are handed over to other workers rather than run to their end (runtime.drain)
worker_shutting_down.connect(drain.begin, weak=False)
worker_process_shutdown.connect(close_browser_host, weak=False)


def execute_run(run_id: int, *, worker: str, queue: str = "", fair: bool = False, handed_over: bool = False) -> None:
    """Claim the run (with `fair`, the fairest admitted run, its own or another: runs.queueing; with `handed_over`, a
    run another worker handed over, to continue it: runs.handover) and run its loop to an ending; a run already
    claimed, cancelled or finished is left alone. `queue`: the one the message came from, where a handover sends the
    run back."""
    if handed_over:
        continued = handover.claim_handed_over(run_id, worker, queue)
        if continued is None:
            log.info("execute_run: run pk %s was already continued or ended", run_id)
        else:
            execute_claimed(continued, worker=worker, continued=True)
        return
    run = lifecycle.claim_fairly(run_id, worker, queue) if fair else lifecycle.claim(run_id, worker, queue)
    if run is None:
        if fair:
            log.info("execute_run: no admitted run left to claim for run pk %s's message", run_id)
        else:
            log.info("execute_run: run pk %s was already claimed or ended", run_id)
        return
    if run.pk != run_id:
        # The message's trace context is another run's launch: this run's trace starts afresh.
        with telemetry.detached():
            execute_claimed(run, worker=worker)
        return
    execute_claimed(run, worker=worker)


def execute_claimed(run: Run, *, worker: str, continued: bool = False) -> None:
    if run.started_at is not None and not continued:
        metrics.queue_wait.observe(max((run.started_at - run.created_at).total_seconds(), 0))
    # The run's span: its model requests and tool calls are its children, and the judgment its ending queues joins
    # the same trace (the judge's message carries it); it continues the launch's trace when the message carries one.
    with telemetry.span("invoke_agent pilothouse", run_attributes(run)) as traced:
        try:
            try:
                run.secrets = unseal(run.secrets)  # in this worker's memory only; the row keeps them sealed
            except SecretsUnavailable as error:
                lifecycle.finish(run, Run.Status.FAILED, error_code="", error_message=str(error))
                return
            resumption = checkpoint.resumption(run) if continued else None
            if run.kind == Run.Kind.SIGN_IN:
                SignInSession(run, browser_host).execute()  # no agent: the operator drives, then saves
            elif (replay := Replay.objects.filter(run=run).select_related("recipe", "version").first()) is not None:
                # the recipe's steps, the agent only if one fails
                ReplayLoop(
                    run, browser_host, replay, worker=worker, continued=continued, resumption=resumption
                ).execute()
            else:
                AgentLoop(run, browser_host, worker=worker, continued=continued, resumption=resumption).execute()
        finally:
            ended = Run.objects.filter(pk=run.pk).first()
            if ended is not None:
                traced.set_attributes(ending_attributes(ended))
                if ended.status == Run.Status.FAILED:
                    traced.set_status(StatusCode.ERROR)


def run_attributes(run: Run) -> dict[str, Any]:
    """What a run's span says of it from the start: ids, model and limits (never its task, URLs or secrets)."""
    return {
        telemetry.OPERATION: "invoke_agent",
        telemetry.AGENT_NAME: "pilothouse",
        telemetry.REQUEST_MODEL: run.model,
        telemetry.CONVERSATION_ID: run.session.public_id,
        "pilothouse.run.id": run.public_id,
        "pilothouse.session.id": run.session.public_id,
        "pilothouse.workspace.id": run.workspace_id,
        "pilothouse.run.max_turns": run.max_turns,
        "pilothouse.run.scripted": run.scripted,
    }


def ending_attributes(run: Run) -> dict[str, Any]:
    """How the run ended: status, error code, the agent's verdict, its requests, tokens and cost."""
    return telemetry.attributes_of(
        {
            "pilothouse.run.status": run.status,
            "pilothouse.run.error_code": run.error_code or None,
            "pilothouse.run.success": run.success,
            "pilothouse.run.requests": run.usage_requests,
            telemetry.INPUT_TOKENS: run.usage_input + run.usage_cache_read + run.usage_cache_write,
            telemetry.OUTPUT_TOKENS: run.usage_output,
            telemetry.CACHE_READ_TOKENS: run.usage_cache_read,
            telemetry.CACHE_CREATION_TOKENS: run.usage_cache_write,
            "pilothouse.cost_usd": run.cost_usd,
        }
    )
