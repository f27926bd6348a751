"""Runs handed to a test worker, and waiting for them (or anything else) to happen."""

import time

import pytest

from runs.models import Event, Run
from tests.support.factories import make_run
from tests.support.workers import RUNTIME_QUEUE

RUN_TIMEOUT = 60


def wait_for(predicate, timeout: float = 30, interval: float = 0.1, message: str = "condition"):
    """Poll until predicate() is truthy and return its value; fail the test with `message` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {message}")


def enqueue(run: Run, queue: str = RUNTIME_QUEUE) -> Run:
    """Hand a committed run to the worker of `queue` (the runtime tests' worker by default)."""
    from runs.tasks import execute_run

    execute_run.apply_async(args=[run.pk], queue=queue)
    return run


def launch(workspace, *, queue: str = RUNTIME_QUEUE, **fields) -> Run:
    return enqueue(make_run(workspace, **fields), queue)


def finished(run: Run, timeout: float = RUN_TIMEOUT) -> Run:
    def ended() -> Run | None:
        run.refresh_from_db()
        return run if run.is_finished else None

    return wait_for(ended, timeout=timeout, message=f"run {run.public_id} to finish")


def events(run: Run, type: str | None = None) -> list[Event]:
    queryset = Event.objects.filter(run=run).order_by("seq")
    return list(queryset.filter(type=type) if type else queryset)


@pytest.fixture
def launches_held(monkeypatch):
    """The API's launch does not enqueue: the test hands the run to its worker's queue itself (launch_through_api)."""
    from runs import tasks

    monkeypatch.setattr(tasks.execute_run, "delay", lambda pk, **_fair: None)


def launch_through_api(api, queue: str = RUNTIME_QUEUE, **body) -> Run:
    """Launch with POST /api/v1/runs (with `launches_held`) and hand the run to the worker of `queue`."""
    launched = api.post("/runs", {"task": "Do the task.", **body})
    assert launched.status_code == 201, launched.content
    return enqueue(Run.objects.get(public_id=launched.json()["id"]), queue)
