"""Browser sessions for real: the worker that runs them (queue `browsers`), the API over Daphne, and waiting for a
session's status."""

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_platform.celery import app
from browsers import services
from tests.support.workers import WorkerProcess, shared_worker, worker_environment

# The browsers queue only. A finished session's judgment is the session's `celery_worker`'s, which exports its traces:
# a second consumer of the judge queue would take judgments other tests read the traces of.
BROWSERS_QUEUES = "browsers"


@pytest.fixture(scope="session")
def browsers_worker(request, django_db_setup, django_db_blocker, clean_broker, tmp_path_factory):
    """A worker on the browsers queue, one a session however many modules bind this fixture: each session it takes is
    a Chromium of its own."""
    request.getfixturevalue("messages_stub_server")  # ANTHROPIC_BASE_URL must be set before the worker starts
    # generous: on a loaded machine a worker's start-up alone can take a minute
    return shared_worker(
        request, tmp_path_factory, django_db_blocker, "browsers", BROWSERS_QUEUES, worker_environment, ready_timeout=180
    )


@contextlib.contextmanager
def worker_of_its_own(monkeypatch, log_path: Path, queue: str, extra_env: dict[str, str]) -> Iterator[WorkerProcess]:
    """A browsers worker of the test's own on a queue of its own, where the test's new sessions go; afterwards its
    whole process group is killed (the Playwright driver and Chromium too, should the test have killed the worker)."""
    monkeypatch.setattr(
        services,
        "run_session",
        app.signature("browsers.tasks.run_session", options={"ignore_result": True, "queue": queue}),
    )
    worker = WorkerProcess(worker_environment(extra_env), log_path, queues=queue, concurrency=2).start()
    try:
        yield worker
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.process.pid, signal.SIGKILL)
        worker.kill()
        worker.log.close()


class BrowsersApi:
    """/api/v1/browsers over HTTP, as a client's program calls it."""

    def __init__(self, base: str, key: str) -> None:
        self.http = httpx.Client(
            base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30, trust_env=False
        )

    def create(self, **fields) -> dict:
        response = self.http.post("/browsers", json=fields)
        assert response.status_code == 201, response.text
        return response.json()

    def get(self, session_id: str) -> httpx.Response:
        return self.http.get(f"/browsers/{session_id}")

    def stop(self, session_id: str) -> dict:
        response = self.http.post(f"/browsers/{session_id}/stop")
        assert response.status_code == 200, response.text
        return response.json()

    def events(self, session_id: str) -> list[dict]:
        return self.http.get(f"/browsers/{session_id}/events").json()["data"]

    def wait_for(self, session_id: str, statuses: tuple[str, ...], timeout: float = 90) -> dict:
        """The session once its status is one of `statuses` (polled: the worker writes it)."""
        deadline = time.monotonic() + timeout
        while True:
            body = self.get(session_id).json()
            if body["status"] in statuses:
                return body
            if time.monotonic() > deadline:
                raise AssertionError(f"session {session_id} still {body['status']} after {timeout} s: {body}")
            time.sleep(0.2)

    def running(self, **fields) -> dict:
        created = self.create(**fields)
        return self.wait_for(created["id"], ("running", "failed", "stopped"))
