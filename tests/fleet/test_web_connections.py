"""A web process's requests give their connection back to the pool as the response leaves the views, whatever happens
to the request after (agent_platform.middleware.connection_back_to_the_pool): a request whose client left mid-view
must not take a connection with it. Without a pool (SQLite) the thread keeps its connection, as before."""

import pytest
from django.db import connection

from agent_platform import db


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
