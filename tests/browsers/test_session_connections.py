"""A browser session holds no database connection while it runs: its database thread gives its connection back after
each call (runtime.browser_sessions.SessionRunner.db, through agent_platform.db.released_after). Two sessions run at
once on a worker whose pool has one connection; before, the first kept that connection for its whole life and the
second waited for one in vain."""

import pytest
from django.db import connection

from browsers import services
from browsers.models import BrowserSession
from tests.support.browser_sessions import worker_of_its_own
from tests.support.launching import wait_for

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("transactional_db"),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the pool is PostgreSQL's"),
]

QUEUE = "browsers-one-connection"


@pytest.fixture
def one_connection_worker(tmp_path, monkeypatch, clean_broker):
    """A worker of its own on a queue of its own, with a pool of one connection that a thread waits 5 s for at most."""
    env = {"DB_POOL_MAX": "1", "DB_POOL_TIMEOUT_SECONDS": "5"}
    with worker_of_its_own(monkeypatch, tmp_path / "worker.log", QUEUE, env) as worker:
        yield worker


def running(session: BrowserSession) -> bool:
    return BrowserSession.objects.get(pk=session.pk).status == BrowserSession.Status.RUNNING


def test_two_sessions_run_at_once_on_one_connection(one_connection_worker, acme):
    first = services.create_session(acme)
    wait_for(lambda: running(first), timeout=120, message="the first session running")
    second = services.create_session(acme)
    wait_for(lambda: running(second), timeout=120, message="the second session running beside the first")

    for session in (first, second):
        services.request_stop(BrowserSession.objects.get(pk=session.pk))
    for session in (first, second):
        wait_for(
            lambda session=session: not BrowserSession.objects.get(pk=session.pk).is_live,
            timeout=60, message="the session ended",
        )  # fmt: skip
        session.refresh_from_db()
        assert session.status == BrowserSession.Status.STOPPED, session.error
    assert "couldn't get a connection" not in one_connection_worker.log_path.read_text(errors="replace")
