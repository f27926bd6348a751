"""The demo as `make run` serves it, for tests: the demo site's own server on an ephemeral port, the scripted model
started as its own process with the demo site's address, and a worker's environment pointed at both."""

import os
import signal
import socketserver
import subprocess
import sys
import threading
import wsgiref.simple_server
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from demo_site import server as demo_server
from tests.support.paths import REPO
from tests.support.workers import WorkerProcess, worker_environment


class ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def demo_base_url() -> Iterator[str]:
    """The demo site's own server on an ephemeral port (never the default one)."""
    demo = wsgiref.simple_server.make_server(
        "127.0.0.1", 0, demo_server.wsgi_application(), server_class=ThreadingWSGIServer, handler_class=QuietHandler
    )
    threading.Thread(target=demo.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{demo.server_address[1]}/"
    demo.shutdown()
    demo.server_close()


@pytest.fixture
def scripted_model(demo_base_url: str) -> Iterator[str]:
    """`python -m scripted_api` as `make run` starts it: DEMO_BASE_URL in its environment, nothing on its command
    line. Yields its base URL."""
    command = subprocess.Popen(
        [sys.executable, "-m", "scripted_api", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "DEMO_BASE_URL": demo_base_url},
    )
    try:
        banner = command.stdout.readline()
        yield banner.split(" on ")[1].split(" ")[0]
    finally:
        command.send_signal(signal.SIGTERM)
        command.wait(timeout=10)


def demo_worker_environment(demo_base_url: str, scripted_model: str, tmp_path: Path, extra: dict | None = None) -> dict:
    """A worker's environment as `make run` sets it without a key: the scripted model, the demo's address, and the
    default allowance (the demo site's port only). Read it with the database unblocked."""
    port = demo_base_url.rstrip("/").rsplit(":", 1)[1]
    env = worker_environment(
        {
            "ANTHROPIC_BASE_URL": scripted_model,
            "ANTHROPIC_API_KEY": "scripted-demo",
            "SCRIPTED_MODEL": "true",
            "DEMO_BASE_URL": demo_base_url,
            "BROWSER_ALLOWED_PRIVATE_HOSTS": f"127.0.0.1:{port},localhost:{port}",
            "MEDIA_ROOT": str(tmp_path / "media"),
            **(extra or {}),
        }
    )
    env.pop("DEMO_PORT", None)
    return env


@contextmanager
def demo_worker(
    django_db_blocker, demo_base_url: str, scripted_model: str, tmp_path: Path, queue: str, extra: dict | None = None
) -> Iterator[WorkerProcess]:
    """A worker on `queue` configured as `make run` configures it without a key, stopped at the block's end."""
    with django_db_blocker.unblock():
        env = demo_worker_environment(demo_base_url, scripted_model, tmp_path, extra)
    worker = WorkerProcess(env, tmp_path / "worker.log", queues=queue).start()
    try:
        yield worker
    finally:
        worker.stop()
