"""A browser session whose worker is lost (SIGKILL: its heartbeat stops) ends failed, `worker_lost`, with a reason that
says so; it is never taken up again by another worker, since its pages and its client's connections died with it."""

import os
import signal
from datetime import timedelta

import pytest
from django.utils import timezone

from browsers import services
from browsers.models import BrowserSession
from tests.support.browser_sessions import worker_of_its_own
from tests.support.launching import wait_for

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

QUEUE = "browsers-lost-worker"
STALE_AFTER = timedelta(seconds=8)


@pytest.fixture
def doomed_worker(tmp_path, monkeypatch, clean_broker):
    """A worker of its own on a queue of its own (the sessions of this test go there), beating every 2 s."""
    env = {"RUN_STALE_AFTER_SECONDS": str(int(STALE_AFTER.total_seconds()))}
    with worker_of_its_own(monkeypatch, tmp_path / "worker.log", QUEUE, env) as worker:
        yield worker


def test_a_session_whose_worker_is_killed_ends_failed_with_the_reason(doomed_worker, acme):
    session = services.create_session(acme)
    wait_for(
        lambda: BrowserSession.objects.get(pk=session.pk).status == BrowserSession.Status.RUNNING,
        timeout=120, message="the session running on the worker",
    )  # fmt: skip
    session.refresh_from_db()
    assert session.worker == doomed_worker.name
    first_beat = session.heartbeat_at
    wait_for(
        lambda: BrowserSession.objects.get(pk=session.pk).heartbeat_at > first_beat,
        timeout=60, message="the worker's heartbeat for the session",
    )  # fmt: skip
    assert services.reap_lost_sessions(STALE_AFTER) == []  # a worker that beats keeps its sessions

    os.kill(doomed_worker.process.pid, signal.SIGKILL)
    doomed_worker.process.wait(timeout=30)
    reaped: list[str] = []
    wait_for(
        lambda: reaped.extend(services.reap_lost_sessions(STALE_AFTER)) or reaped,
        timeout=60, message="the reaper ending the session of the lost worker",
    )  # fmt: skip
    assert reaped == [session.public_id]

    session.refresh_from_db()
    assert session.status == BrowserSession.Status.FAILED
    assert session.stop_reason == BrowserSession.StopReason.WORKER_LOST
    assert session.error.startswith("The worker running this browser was lost")
    assert doomed_worker.name in session.error
    assert session.relay_address == "" and session.ended_at is not None and not session.is_live
    last = session.events.order_by("-seq").first()
    assert last.type == "browser.ended" and last.payload["reason"] == "worker_lost"
    # never reconnected: no worker takes it up again, and a second reaping changes nothing
    assert services.claim(session.pk, worker="another@host") is None
    assert services.reap_lost_sessions(timedelta(0)) == []
    assert session.browser_minutes() >= 1 and session.ended_at <= timezone.now()


def test_a_session_the_reaper_ended_is_not_ended_again_by_its_worker(acme):
    """A worker that was only slow (its beats late) and ends its session after the reaper did leaves the reaper's
    reason: the session ends once."""
    session = services.create_session(acme)
    services.claim(session.pk, worker="slow@host")
    services.mark_running(session, "127.0.0.1:1", "/tmp/downloads")
    BrowserSession.objects.filter(pk=session.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    assert services.reap_lost_sessions(STALE_AFTER) == [session.public_id]
    assert services.stop_requested(session.pk) == BrowserSession.StopReason.WORKER_LOST  # the worker's watch stops
    services.end(session, BrowserSession.StopReason.IDLE_TIMEOUT)
    session.refresh_from_db()
    assert (session.status, session.stop_reason) == (
        BrowserSession.Status.FAILED,
        BrowserSession.StopReason.WORKER_LOST,
    )
    assert [event.type for event in session.events.order_by("seq")].count("browser.ended") == 1
