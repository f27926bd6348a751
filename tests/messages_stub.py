"""The pytest fixtures of the scripted Messages API (scripted_api.stub): one stub per session, emptied per test."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from scripted_api.stub import MessagesStub


def point_environment_at(stub: MessagesStub) -> None:
    """Make every Anthropic client built from the environment (ours and a worker subprocess's) use the stub."""
    os.environ["ANTHROPIC_BASE_URL"] = stub.base_url
    os.environ["ANTHROPIC_API_KEY"] = "test-key"


@pytest.fixture(scope="session")
def messages_stub_server() -> Iterator[MessagesStub]:
    """The session's stub, with the environment pointing at it; session fixtures (the worker) depend on this."""
    stub = MessagesStub.shared()
    point_environment_at(stub)
    yield stub


@pytest.fixture
def messages_stub(messages_stub_server: MessagesStub) -> Iterator[MessagesStub]:
    """The shared stub, emptied before and after the test so no reply or record leaks between tests."""
    messages_stub_server.reset()
    point_environment_at(messages_stub_server)
    yield messages_stub_server
    wait_for_running_runs_to_end()
    unexpected = messages_stub_server.unexpected_refusals()
    messages_stub_server.reset()
    if unexpected:
        # A request the real API would refuse is a bug of the code under test, whatever the test asserted.
        pytest.fail(
            "the Messages stub refused requests the test did not expect:\n"
            + "\n".join(f"  - {refusal.full_message}" for refusal in unexpected),
            pytrace=False,
        )


def wait_for_running_runs_to_end(timeout: float = 20) -> None:
    """Let runs a worker still executes end (unscripted, they fail at once) before the next test scripts replies,
    so no run of this test takes a reply meant for the next one."""
    from runs.models import Run

    deadline = time.monotonic() + timeout
    try:
        while Run.objects.filter(status=Run.Status.RUNNING).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
    except Exception:  # noqa: S110  (a test without database access has no runs to wait for)
        pass
