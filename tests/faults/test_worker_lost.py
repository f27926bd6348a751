"""A run outlives its worker (runs.handover): a worker SIGKILLed mid-run has its run continued by another worker from
its last committed turn (the conversation sent again exactly, thinking signatures included, so the strict stub accepts
it; the browser reopened where the turn left it); a worker given SIGTERM hands its run over within
WORKER_DRAIN_SECONDS; the message Celery redelivers (late acknowledgement) is refused; a run lost more than
RUN_MAX_RECOVERIES times ends worker_lost."""

import os
import signal
import time
from datetime import timedelta
from typing import Any

import pytest

from agent_platform.celery import app
from agent_platform.models import ModelRequest
from runs import handover, lifecycle
from runs.models import Run, RunCheckpoint
from runtime.record import NotThisWorkers, TurnRecord
from tests import messages_stub as stub_fixtures
from tests.support import sites
from tests.support.factories import make_run
from tests.support.launching import enqueue, events, finished, wait_for
from tests.support.processes import chromium_pids
from tests.support.replies import HeldReply, browser, done
from tests.support.sites import site_url
from tests.support.workers import WorkerProcess, fault_worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_site = sites.fault_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

STALE_AFTER_SECONDS = 5
DRAIN_SECONDS = 20
TURNS = 12  # model requests a run makes: 11 browser actions, then done
LOST_AT = 5  # action turns committed when the worker is lost; the 6th request is in flight


def redeliver_unacknowledged(queue_url: str) -> None:
    """What kombu's Redis transport does once a message's visibility timeout has passed (40 minutes in settings):
    put the messages a lost worker had taken but not acknowledged back on their queue."""
    with app.connection_for_write(queue_url, transport_options={"visibility_timeout": 0}) as connection:
        connection.default_channel.qos.restore_visible(num=100, interval=1)


def kill_browsers(pids: list[int]) -> None:
    for pid in pids:  # Playwright starts Chromium in a process group of its own
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def step_url(site: Any, step: int) -> str:
    """Step 1 signs in (a cookie and local storage: tests/pages/state.html), step 6 reads them back; the others walk
    the shop's pages."""
    if step == 1:
        return f"{site_url(site)}/state.html?set"
    if step == 6:
        return f"{site_url(site)}/state.html"
    return f"{site_url(site)}/runtime_shop.html?step={step}"


def script(site: Any, held_at: int, held: HeldReply) -> list:
    """TURNS replies, each action with a thinking block the stub signs: navigate to step 1, 2, ... then done; the
    request `held_at` (1-based) is held."""
    replies: list = [
        browser("navigate", url=step_url(site, step), thinking=f"Step {step}: on to the next page.")
        for step in range(1, TURNS)
    ]
    replies[6] = browser("get_page_text", thinking="Step 7: read what the page remembers.")
    replies.append(done(output="Walked every step.", thinking="Every step is done."))
    replies.insert(held_at - 1, held)
    return replies


def walk(acme: Any, site: Any) -> Run:
    return make_run(acme, task="Walk the steps.", start_url=step_url(site, 0), max_turns=TURNS + 2)


def worker_env(tmp_path, name: str, **extra: str) -> dict:
    # the model's timeout outlasts a held request, so the SDK never retries it into the next scripted reply
    return fault_worker_environment(
        {
            "RUN_STALE_AFTER_SECONDS": str(STALE_AFTER_SECONDS),
            "MODEL_TIMEOUT_SECONDS": "90",
            "BROWSER_ACTION_TIMEOUT_SECONDS": "10",
            "MEDIA_ROOT": str(tmp_path / name / "media"),
            **extra,
        }
    )


def without_breakpoints(blocks: list[dict]) -> list[dict]:
    return [{key: value for key, value in block.items() if key != "cache_control"} for block in blocks]


def assert_one_timeline(run: Run) -> list:
    timeline = events(run)
    seqs = [event.seq for event in timeline]
    assert seqs == list(range(1, len(seqs) + 1)), "one gap-free sequence, no seq twice"
    assert [event.type for event in timeline].count("run.started") == 1
    assert [event.type for event in timeline].count("run.finished") == 1
    return timeline


def test_a_run_whose_worker_is_killed_goes_on_on_another_worker_from_its_last_turn_and_succeeds(
    acme, fault_site, messages_stub, messages_stub_server, tmp_path, settings
):
    queue = f"fault-kill-{time.monotonic_ns()}"
    first = WorkerProcess(worker_env(tmp_path, "first"), tmp_path / "first.log", queues=queue).start()
    # the lost request's reply (never read: its worker is dead by then); the replacement comes next in the script
    held = HeldReply(browser("navigate", url=step_url(fault_site, 99)))
    messages_stub.agent(*script(fault_site, LOST_AT + 1, held))
    run = enqueue(walk(acme, fault_site), queue=queue)
    browsers: list[int] = []
    try:
        assert held.arrived.wait(90), "the run never reached the request after its fifth turn"
        # the fifth turn's record and checkpoint are committed by the run's lane while the model answers
        wait_for(
            lambda: RunCheckpoint.objects.filter(run=run, turn=LOST_AT).exists(), message="the fifth turn's checkpoint"
        )
        browsers = chromium_pids(first.process.pid)
        first.kill(signal.SIGKILL)
    finally:
        held.release.set()
        first.stop()
        kill_browsers(browsers)

    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING
    # the second worker takes this test's queue: a handed-over run goes back to the queue it was taken from
    second = WorkerProcess(worker_env(tmp_path, "second"), tmp_path / "second.log", queues=queue).start()
    try:
        handed = wait_for(
            lambda: lifecycle.reap_stale_runs(timedelta(seconds=STALE_AFTER_SECONDS)),
            timeout=STALE_AFTER_SECONDS + 15,
            interval=0.5,
            message="the reaper to hand the run over",
        )
        assert handed == [run.public_id]
        finished(run, timeout=120)
        assert run.status == Run.Status.SUCCEEDED, run.error_message
        assert run.output == "Walked every step."
        assert run.worker == second.name and run.worker_losses == 1 and run.signals["worker_losses"] == 1
        assert run.queue == queue

        timeline = assert_one_timeline(run)
        types = [event.type for event in timeline]
        lost = next(event for event in timeline if event.type == "run.worker_lost")
        recovered = next(event for event in timeline if event.type == "run.recovered")
        assert lost.payload["checkpoint_turn"] == LOST_AT and lost.payload["cause"] == "worker_lost"
        assert recovered.payload == {"worker": second.name, "from_turn": LOST_AT, "cause": "worker_lost"}
        assert lost.seq < recovered.seq
        # every turn's tool call once, in order: the lost one was never recorded, and was redone
        calls = [event.payload for event in timeline if event.type == "agent.tool_use"]
        expected = [step_url(fault_site, step) for step in range(1, TURNS)]
        expected[6] = None  # get_page_text
        assert [call["input"].get("url") for call in calls] == [*expected, None]
        # the cookie and local storage set before the loss are in the browser the second worker started
        remembered = [event.payload["content"] for event in timeline if event.type == "agent.tool_result"][6]
        assert "session_token=abc123" in remembered and "kept in local storage" in remembered
        assert types.index("run.recovered") < types.index("agent.tool_use", types.index("run.worker_lost"))

        requests = messages_stub.requests
        assert len(requests) == TURNS + 1, "every turn's request, and the lost one sent once more"
        lost_request, continued = requests[LOST_AT]["messages"], requests[LOST_AT + 1]["messages"]
        # the conversation is sent again as it was, its assistant turns (and their signed thinking) unchanged; only
        # the notice of the restart is added after the fifth turn's results
        assert continued[:-1] == lost_request[:-1]
        # (the cache breakpoint moves from the results' last block to the notice after them)
        assert without_breakpoints(continued[-1]["content"][:-1]) == without_breakpoints(lost_request[-1]["content"])
        notice = continued[-1]["content"][-1]["text"]
        assert "the worker running this task was lost" in notice
        assert f"It is now at {step_url(fault_site, LOST_AT)}" in notice
        assert not messages_stub.unexpected_refusals()

        # each request billed once: the one lost with its worker is not billed at all (its turn was never recorded)
        billed = ModelRequest.objects.filter(run=run)
        assert run.usage_requests == billed.count() == TURNS
        assert not RunCheckpoint.objects.filter(run=run).exists(), "an ended run keeps no checkpoint"

        # The killed worker's own message is still unacknowledged in Redis and comes back: it is refused.
        redeliver_unacknowledged(settings.CELERY_BROKER_URL)
        sent = len(messages_stub.requests)
        wait_for(
            lambda: b"was already claimed or ended" in second.log_path.read_bytes(),
            timeout=30,
            message="the second worker to receive the redelivered run and refuse it",
        )
        assert len(messages_stub.requests) == sent
    finally:
        second.stop()


def test_a_worker_told_to_stop_hands_its_run_over_within_the_drain_time(
    acme, fault_site, messages_stub, messages_stub_server, tmp_path
):
    queue = f"fault-drain-{time.monotonic_ns()}"
    env = worker_env(tmp_path, "first", WORKER_DRAIN_SECONDS=str(DRAIN_SECONDS))
    first = WorkerProcess(env, tmp_path / "first.log", queues=queue).start()
    # started once the first holds the run, so the run's own message can only have gone to the first
    second = WorkerProcess(worker_env(tmp_path, "second"), tmp_path / "second.log", queues=queue)
    held = HeldReply(browser("navigate", url=step_url(fault_site, 3), thinking="Step 3: on to the next page."))
    replies = script(fault_site, 3, held)
    del replies[3]  # the held request answers the third step itself
    messages_stub.agent(*replies)
    run = enqueue(walk(acme, fault_site), queue=queue)
    browsers: list[int] = []
    try:
        assert held.arrived.wait(90), "the run never reached its third request"
        second.start()
        browsers = chromium_pids(first.process.pid)
        # a deploy: the worker's main process told to stop (Celery's warm shutdown), as an orchestrator does
        first.process.send_signal(signal.SIGTERM)
        told = time.monotonic()
        time.sleep(1)
        held.release.set()  # the turn in progress finishes, then the run is handed over
        first.process.wait(timeout=DRAIN_SECONDS + 10)
        exited_after = time.monotonic() - told
        finished(run, timeout=120)
    finally:
        held.release.set()
        first.stop()
        if second.process is not None:
            second.stop()
        kill_browsers(browsers)

    assert exited_after < DRAIN_SECONDS, "the worker handed over its turn and exited before the drain deadline"
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert run.worker == second.name
    assert (run.worker_losses, run.handovers) == (0, 1), "a drain is no loss: it does not count toward the limit"
    timeline = assert_one_timeline(run)
    handed = next(event for event in timeline if event.type == "run.handed_over")
    recovered = next(event for event in timeline if event.type == "run.recovered")
    # the third turn was finished by the stopping worker: the next one goes on from it, nothing is redone
    assert handed.payload["cause"] == "drain" and handed.payload["checkpoint_turn"] == 3
    assert recovered.payload == {"worker": second.name, "from_turn": 3, "cause": "drain"}
    assert len(messages_stub.requests) == TURNS
    assert "stopped for maintenance" in messages_stub.requests[3]["messages"][-1]["content"][-1]["text"]
    assert ModelRequest.objects.filter(run=run).count() == run.usage_requests == TURNS


def test_a_worker_that_was_taken_for_lost_cannot_write_over_the_one_that_continued(acme):
    run = make_run(acme, status=Run.Status.RUNNING, worker="celery@slow")
    slow = TurnRecord(run, handovers=0, signals=dict, live_view_image=lambda: lambda: None, browser_state=lambda: None)
    try:
        assert handover.hand_over(run, handovers=0, cause=handover.WORKER_LOST, worker="celery@slow")
        slow.event("agent.message", {"text": "late", "turn": 3, "source": "text"})
        slow.hand_off()
        with pytest.raises(Exception) as refused:
            slow.flush()
        assert isinstance(refused.value.__cause__, NotThisWorkers)
    finally:
        slow.lane.close()
    assert not events(run, "agent.message")
    assert lifecycle.heartbeat(run, 0) is False
    assert not lifecycle.finish(run, Run.Status.SUCCEEDED, success=True, handovers=0)
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING
