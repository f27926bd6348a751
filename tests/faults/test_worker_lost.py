"""A worker killed with SIGKILL mid-run: the reaper fails the run with worker_lost, its events stay, and the message
Celery redelivers (late acknowledgement) is refused by the next worker instead of executing the run again."""

import os
import signal
import threading
import time
from datetime import timedelta

import pytest

from agent_platform.celery import app
from runs import lifecycle
from runs.models import Run
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import sites
from tests.support.factories import make_run
from tests.support.launching import enqueue, events, wait_for
from tests.support.processes import chromium_pids
from tests.support.replies import browser
from tests.support.sites import site_url
from tests.support.workers import WorkerProcess, fault_worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_site = sites.fault_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

STALE_AFTER_SECONDS = 5


def redeliver_unacknowledged(queue_url: str) -> None:
    """What kombu's Redis transport does once a message's visibility timeout has passed (40 minutes in settings):
    put the messages a lost worker had taken but not acknowledged back on their queue."""
    with app.connection_for_write(queue_url, transport_options={"visibility_timeout": 0}) as connection:
        connection.default_channel.qos.restore_visible(num=100, interval=1)


def test_a_killed_worker_fails_its_run_with_worker_lost_and_the_run_is_never_executed_again(
    acme, fault_site, messages_stub, messages_stub_server, tmp_path, settings
):
    queue = f"fault-kill-{time.monotonic_ns()}"
    env = fault_worker_environment(
        {"RUN_STALE_AFTER_SECONDS": str(STALE_AFTER_SECONDS), "MEDIA_ROOT": str(tmp_path / "media")}
    )
    first = WorkerProcess(env, tmp_path / "first.log", queues=queue).start()
    thinking, release = threading.Event(), threading.Event()

    def slow_model(request: dict) -> dict:
        thinking.set()
        release.wait(60)  # the worker dies while it waits for this answer
        return tool_use_reply("done", {"success": True, "output": "too late"})

    messages_stub.agent(browser("get_page_text"), slow_model)
    run = enqueue(make_run(acme, start_url=f"{site_url(fault_site)}/runtime_shop.html"), queue=queue)
    browsers = []
    try:
        assert thinking.wait(60), "the run never reached its second model request"
        # The first turn's record is committed by the run's lane while the model answers the next request
        # (runtime.record): wait for it, so that what was written before the kill is all that is ever written.
        wait_for(lambda: events(run, "agent.tool_result"), message="the first turn's record")
        browsers = chromium_pids(first.process.pid)
        before_kill = [(event.seq, event.type, event.payload) for event in events(run)]
        first.kill(signal.SIGKILL)
        killed_at = time.monotonic()
    finally:
        release.set()
        first.stop()
        for pid in browsers:  # Playwright starts Chromium in a process group of its own
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING, "nothing ended the run yet: only the reaper may"
    reaped = wait_for(
        lambda: lifecycle.reap_stale_runs(timedelta(seconds=STALE_AFTER_SECONDS)),
        timeout=STALE_AFTER_SECONDS + 15,
        interval=0.5,
        message="the reaper to fail the run",
    )
    assert reaped == [run.public_id]
    assert time.monotonic() - killed_at < STALE_AFTER_SECONDS + 15
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.WORKER_LOST
    after = [(event.seq, event.type, event.payload) for event in events(run)]
    assert after[: len(before_kill)] == before_kill, "every event written before the kill is still there"
    assert [event_type for _, event_type, _ in after[len(before_kill) :]] == ["run.finished"]

    # With late acknowledgement the killed worker's message is still unacknowledged in Redis and comes back.
    redeliver_unacknowledged(settings.CELERY_BROKER_URL)
    requests_so_far = len(messages_stub.requests)
    second = WorkerProcess(env, tmp_path / "second.log", queues=queue).start()
    try:
        wait_for(
            lambda: b"was already claimed or ended" in second.log_path.read_bytes(),
            timeout=30,
            message="the second worker to receive the redelivered run and refuse it",
        )
        time.sleep(0.5)
    finally:
        second.stop()
    assert len(events(run, "run.started")) == 1
    assert len(messages_stub.requests) == requests_so_far, "no new model request: the run was not executed again"
    run.refresh_from_db()
    assert run.error_code == Run.ErrorCode.WORKER_LOST
