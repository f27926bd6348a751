"""Chromium of a killed worker: it outlives the worker (its own process group), and the next worker that starts on the
machine kills it, while the browsers of a worker that is alive are left alone."""

import json
import os
import signal
import time

import pytest

from runs.models import Run
from runtime.browser.reaper import reap_orphans
from tests import messages_stub as stub_fixtures
from tests.support import sites
from tests.support.factories import make_run
from tests.support.launching import enqueue, finished, wait_for
from tests.support.processes import alive, chromium_pids
from tests.support.replies import browser, done
from tests.support.sites import site_url
from tests.support.workers import WorkerProcess, fault_worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_site = sites.fault_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


def run_once(acme, fault_site, messages_stub, queue: str) -> None:
    messages_stub.agent(browser("get_page_text"), done(True, "Read it."))
    run = finished(enqueue(make_run(acme, start_url=f"{site_url(fault_site)}/runtime_shop.html"), queue=queue))
    assert run.status == Run.Status.SUCCEEDED, run.error_message


def test_a_starting_worker_kills_the_chromium_a_killed_worker_left(acme, fault_site, messages_stub, tmp_path):
    queue = f"fault-orphans-{time.monotonic_ns()}"
    pid_dir = tmp_path / "browsers"
    env = fault_worker_environment({"BROWSER_PID_DIR": str(pid_dir), "MEDIA_ROOT": str(tmp_path / "media")})
    first = WorkerProcess(env, tmp_path / "first.log", queues=queue).start()
    second = None
    leaked: list[int] = []
    try:
        run_once(acme, fault_site, messages_stub, queue)
        leaked = chromium_pids(first.process.pid)
        recorded = json.loads((pid_dir / f"{first.process.pid}.json").read_text())
        # A healthy Chromium exits when its driver's pipe closes; one that is wedged does not. Stopped here, so it
        # cannot exit on its own, like a browser hung in a page at the moment its worker is killed.
        for pid in leaked:
            os.kill(pid, signal.SIGSTOP)
        first.kill(signal.SIGKILL)  # the worker's whole process group, Playwright's driver included
        time.sleep(1)
        assert leaked and all(alive(pid) for pid in leaked), "the wedged Chromium outlives its SIGKILLed worker"
        assert set(leaked) <= {process["pid"] for process in recorded["processes"]}

        second = WorkerProcess(env, tmp_path / "second.log", queues=queue).start()
        wait_for(
            lambda: not any(alive(pid) for pid in leaked), timeout=20, message="the orphaned Chromium to be killed"
        )
        assert not (pid_dir / f"{first.process.pid}.json").exists()

        # the second worker's own browser is recorded, and left alone while that worker lives
        run_once(acme, fault_site, messages_stub, queue)
        own = chromium_pids(second.process.pid)
        assert own and (pid_dir / f"{second.process.pid}.json").exists()
        assert reap_orphans(pid_dir) == []
        assert all(alive(pid) for pid in own)
    finally:
        if second is not None:
            second.stop()
        first.stop()
        for pid in leaked:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
