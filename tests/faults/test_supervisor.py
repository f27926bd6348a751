"""`make run`'s supervisor (scripts/run.py) when its worker is SIGKILLed mid-run: the web stays up, a new worker comes
up and continues the run from its last turn (runs.handover) to success in one continuous timeline, nothing of the dead
worker is left running; SIGTERM stops everything cleanly, the worker first, which hands its run in flight over.

Runs the real supervisor in a scratch directory on this helper's own ports, with its embedded Redis, against the
test database and the Messages stub.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from runs import lifecycle
from runs.models import Run, RunCheckpoint
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support.launching import events, wait_for
from tests.support.paths import REPO
from tests.support.processes import chromium_pids, command_line, descendants, group_alive, group_members, stat
from tests.support.replies import HeldReply, browser, done
from tests.support.sites import free_port
from tests.support.workers import worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


PORT, DEMO_PORT = free_port(), free_port()


def celery_workers(supervisor: int) -> list[int]:
    """The supervisor's worker processes (its direct children running celery)."""
    found = []
    for pid in descendants(supervisor):
        try:
            args = command_line(pid)
        except OSError:
            continue
        process = stat(pid)
        if process is not None and process.parent == supervisor and b"celery" in args and b"worker" in args:
            found.append(pid)
    return found


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except OSError:
        return 0


def test_the_supervisor_restarts_a_killed_worker_which_continues_the_run(
    acme_key, messages_stub, messages_stub_server, tmp_path
):
    thinking, release = threading.Event(), threading.Event()

    def slow_model(request: dict) -> dict:
        thinking.set()
        release.wait(120)  # the worker is killed while it waits for this answer
        return tool_use_reply("done", {"success": True, "output": "too late"})

    # the slow request's reply is never read (its worker is dead): the restarted worker's request gets the done
    messages_stub.agent(browser("get_page_text"), slow_model, done(output="Read it after a restart."))
    stopping = HeldReply(browser("get_page_text"))  # the second run's, held while make run stops
    env = worker_environment(
        {
            "PILOTHOUSE_VAR_DIR": str(tmp_path / "var"),
            "PORT": str(PORT),
            "DEMO_PORT": str(DEMO_PORT),
            "ANTHROPIC_API_KEY": "sk-test-supervisor",
            "RUN_STALE_AFTER_SECONDS": "5",
            "WORKER_CONCURRENCY": "2",
        }
    )
    env.pop("REDIS_URL")  # the supervisor's own embedded Redis, as `make run` starts it
    log_path = tmp_path / "run.log"
    with open(log_path, "wb") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "scripts/run.py"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    groups: set[int] = set()
    try:
        wait_for(lambda: b"Pilothouse is up" in log_path.read_bytes(), timeout=180, message="make run to come up")
        assert b"worker: 2 runs at once (WORKER_CONCURRENCY)" in log_path.read_bytes()  # it says what it starts
        groups = {pid for pid in descendants(supervisor.pid) if os.getpgid(pid) == pid}
        (worker,) = celery_workers(supervisor.pid)
        request = urllib.request.Request(
            f"http://127.0.0.1:{PORT}/api/v1/runs",
            data=json.dumps(
                {"task": "Read the shop.", "start_url": f"http://127.0.0.1:{DEMO_PORT}/demo/shop/"}
            ).encode(),
            headers={"Authorization": f"Bearer {acme_key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            run_id = json.loads(response.read())["id"]
        assert thinking.wait(120), "the run never reached its second model request"
        # the first turn's record and checkpoint are committed while the model answers: the new worker goes on from it
        wait_for(
            lambda: RunCheckpoint.objects.filter(run__public_id=run_id, turn=1).exists(),
            message="the first turn's checkpoint",
        )
        browsers = chromium_pids(worker)
        assert browsers

        os.kill(worker, signal.SIGKILL)

        wait_for(lambda: b"worker exited with code -9; restarting" in log_path.read_bytes(), timeout=20,
                 message="the supervisor to notice")  # fmt: skip
        assert get(f"http://127.0.0.1:{PORT}/login/") == 200, "the web stays up"
        assert supervisor.poll() is None
        new_worker = wait_for(
            lambda: [pid for pid in celery_workers(supervisor.pid) if pid != worker], timeout=60, message="a new worker"
        )
        wait_for(lambda: not group_alive(worker), timeout=20, message="the dead worker's group to be empty")
        wait_for(lambda: not any(Path(f"/proc/{pid}").exists() for pid in browsers), timeout=30,
                 message="the dead worker's Chromium to be gone")  # fmt: skip
        run = wait_for(
            lambda: Run.objects.filter(public_id=run_id, finished_at__isnull=False).first(),
            timeout=120,
            interval=1,
            message="the restarted worker to continue the run to its end",
        )
        assert (run.status, run.output, run.worker_losses) == (Run.Status.SUCCEEDED, "Read it after a restart.", 1)
        timeline = events(run)
        assert [event.seq for event in timeline] == list(range(1, len(timeline) + 1)), "one continuous timeline"
        types = [event.type for event in timeline]
        assert types.index("run.worker_lost") < types.index("run.recovered") < types.index("run.finished")
        assert [event.payload["from_turn"] for event in timeline if event.type == "run.recovered"] == [1]
        assert celery_workers(supervisor.pid) == new_worker
        groups |= set(new_worker)
        assert get(f"http://127.0.0.1:{DEMO_PORT}/demo/shop/") == 200

        # Stopping make run mid-run: the worker is told first and hands its run over once the turn is recorded.
        messages_stub.agent(browser("get_page_text"), stopping)
        with urllib.request.urlopen(request, timeout=30) as response:
            second_id = json.loads(response.read())["id"]
        assert stopping.arrived.wait(120), "the second run never reached its second model request"
        os.kill(supervisor.pid, signal.SIGTERM)
        wait_for(lambda: b"stopping worker (handing its runs over)" in log_path.read_bytes(), timeout=20,
                 message="the supervisor to tell the worker first")  # fmt: skip
        stopping.release.set()
        supervisor.wait(timeout=60)
        second = Run.objects.get(public_id=second_id)
        assert (second.status, second.handovers, second.worker_losses) == (Run.Status.RUNNING, 1, 0)
        assert second.handed_over_at is not None, "it waits for the next start's worker"
        [handed] = events(second, "run.handed_over")
        assert handed.payload["cause"] == "drain" and handed.payload["checkpoint_turn"] == 2
        lifecycle.request_cancel(second)  # with no worker holding it, a cancel ends it at once
        assert second.status == Run.Status.CANCELLED
    finally:
        release.set()
        stopping.release.set()
        if supervisor.poll() is None:
            os.kill(supervisor.pid, signal.SIGTERM)
        try:
            code = supervisor.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(supervisor.pid, signal.SIGKILL)
            code = supervisor.wait()
        # killed members take a moment to be reaped: wait until none is left, within a bound, then read what is
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(group_members(pgid) for pgid in groups):
            time.sleep(0.1)
        leftovers = [member for pgid in groups for member in group_members(pgid)]
        for pgid in groups:  # cleaned up either way, then reported below
            if group_alive(pgid):
                os.killpg(pgid, signal.SIGKILL)

    assert code == 0, log_path.read_text()[-3000:]
    assert b"stopping web" in log_path.read_bytes()
    assert leftovers == [], "every process group of the platform is gone after SIGTERM"
