"""`make run`'s supervisor (scripts/run.py) and its stop signals: started as a background shell starts it (SIGINT
inherited ignored), Ctrl-C still stops it; a second signal during the shutdown (make forwarding SIGTERM after the
terminal's SIGINT, Ctrl-C twice) kills what is left instead of aborting the cleanup, so no process group of the
platform survives and every port it bound is free again."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.request

import pytest

from scripted_api.wire import tool_use_reply
from scripts.run import SCRIPTED_MODEL_PORT_OFFSET, scripted_model_port
from tests import messages_stub as stub_fixtures
from tests.support.launching import wait_for
from tests.support.paths import REPO
from tests.support.processes import descendants, group_alive, group_members
from tests.support.replies import browser
from tests.support.sites import free_port
from tests.support.workers import worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


def port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_the_scripted_model_port_follows_port_unless_set():
    assert scripted_model_port({}) == 8765
    assert scripted_model_port({"PORT": "8300"}) == 8300 + SCRIPTED_MODEL_PORT_OFFSET
    assert scripted_model_port({"PORT": "8300", "SCRIPTED_MODEL_PORT": "9999"}) == 9999


def test_ctrl_c_with_sigint_ignored_then_a_second_signal_stops_everything(
    acme_key, messages_stub, messages_stub_server, tmp_path
):
    # A run holds the worker in its warm shutdown (it waits for the model's answer until the test is done), so the
    # second signal is sure to arrive while the supervisor is still stopping its children.
    thinking, release = threading.Event(), threading.Event()

    def held_model(request: dict) -> dict:
        thinking.set()
        release.wait(120)
        return tool_use_reply("done", {"success": True, "output": "too late"})

    messages_stub.agent(browser("get_page_text"), held_model)
    port, demo_port = free_port(), free_port()
    env = worker_environment(
        {
            "PILOTHOUSE_VAR_DIR": str(tmp_path / "var"),
            "PORT": str(port),
            "DEMO_PORT": str(demo_port),
            "ANTHROPIC_API_KEY": "sk-test-supervisor-signals",
            "WORKER_CONCURRENCY": "1",
        }
    )
    env.pop("REDIS_URL")  # the supervisor's own embedded Redis, as `make run` starts it
    log_path = tmp_path / "run.log"

    def as_a_background_shell_starts_it() -> None:
        os.setsid()
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    with open(log_path, "wb") as log:
        supervisor = subprocess.Popen(
            [sys.executable, "scripts/run.py"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
            preexec_fn=as_a_background_shell_starts_it,
        )  # fmt: skip
    groups: set[int] = set()
    try:
        wait_for(lambda: b"Pilothouse is up" in log_path.read_bytes(), timeout=240, message="make run to come up")
        groups = {pid for pid in descendants(supervisor.pid) if os.getpgid(pid) == pid}
        assert len(groups) >= 4, "redis, worker, web and demo site each lead a group"
        assert not port_is_free(port) and not port_is_free(demo_port)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/v1/runs",
            data=json.dumps(
                {"task": "Read the shop.", "start_url": f"http://127.0.0.1:{demo_port}/demo/shop/"}
            ).encode(),
            headers={"Authorization": f"Bearer {acme_key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 201
        assert thinking.wait(120), "the run never reached its second model request"

        supervisor.send_signal(signal.SIGINT)  # Ctrl-C
        wait_for(lambda: b"stopping " in log_path.read_bytes(), timeout=30, message="the shutdown to begin")
        supervisor.send_signal(signal.SIGTERM)  # the second signal arrives while it stops its children
        supervisor.wait(timeout=60)
    finally:
        release.set()
        if supervisor.poll() is None:
            os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()
        with contextlib.suppress(pytest.fail.Exception):  # what is left is reported below
            wait_for(lambda: not any(group_alive(pgid) for pgid in groups), timeout=10, message="the groups to go")
        leftovers = [member for pgid in groups for member in group_members(pgid)]
        for pgid in groups:  # cleaned up either way, then reported below
            if group_alive(pgid):
                os.killpg(pgid, signal.SIGKILL)

    output = log_path.read_text()
    assert "KeyboardInterrupt" not in output, output[-3000:]
    assert "SIGTERM again: killing every process now" in output, output[-3000:]
    assert supervisor.returncode == 0, output[-3000:]
    assert leftovers == [], "every process group of the platform (Redis, worker and its Chromium, servers) is gone"
    assert port_is_free(port) and port_is_free(demo_port), "the web and demo ports are free"
