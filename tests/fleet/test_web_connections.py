"""A web process's requests give their connection back to the pool as the response leaves the views, whatever happens
to the request after (agent_platform.middleware.connection_back_to_the_pool): a request whose client left mid-view
must not take a connection with it. Without a pool (SQLite) the thread keeps its connection, as before. Error pages,
which Django renders on another thread, give theirs back too (agent_platform.error_pages)."""

import httpx
import pytest
from django.db import connection
from django.test import Client

from agent_platform import db
from tests.support.live import daphne
from tests.support.workers import worker_environment


@pytest.mark.django_db(transaction=True)
def test_a_request_gives_its_connection_back_as_its_response_leaves(alice_client, acme):
    connection.ensure_connection()

    answered = alice_client.get("/")

    assert answered.status_code == 200
    # The view read the database in this thread (the test client's), and gave the connection back when done.
    assert (connection.connection is None) == db.pooled()


@pytest.mark.django_db
def test_inside_a_transaction_the_connection_is_kept(alice_client, acme):
    answered = alice_client.get("/")

    assert answered.status_code == 200
    assert connection.in_atomic_block and connection.connection is not None


ERROR_PAGES = 16  # more than the event loop's default executor has threads (min(32, cores + 4))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the pool is PostgreSQL's")
@pytest.mark.usefixtures("transactional_db")
def test_error_pages_give_their_connection_back_over_asgi(alice, tmp_path_factory):
    """Over ASGI Django renders an error page on a thread of the event loop's executor, which outlives the request
    (agent_platform.error_pages): a web process with a pool of 2 serves pages after many 404s to a signed-in person,
    whose 404 page reads the database."""
    client = Client()
    client.force_login(alice)
    cookie = {"sessionid": client.cookies["sessionid"].value}
    env = worker_environment({"DB_POOL_MAX": "2", "DB_POOL_TIMEOUT_SECONDS": "3"})
    with daphne(tmp_path_factory, env) as server, httpx.Client(base_url=server, cookies=cookie, timeout=30) as web:
        for number in range(ERROR_PAGES):
            assert web.get(f"/no-such-page-{number}/").status_code == 404

        runs = web.get("/")

    # A pool left empty would have made the page wait its 3 s for a connection and fail.
    assert runs.status_code == 200, runs.text[:500]
    assert "alice" in runs.text or "Acme" in runs.text
