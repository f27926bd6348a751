"""The network guard at the level of a run: the agent's navigations to internal addresses and, with allowed_domains,
to other hosts come back as refused tool results, refused before any connection is made."""

import pytest

from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support import sites, workers
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done
from tests.support.sites import site_url
from tests.support.workers import FAULT_QUEUE

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_worker = workers.fault_worker
fault_site = sites.fault_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("fault_worker", "transactional_db")]

REFUSED = "Navigation refused by the network policy"


def refusals(run: Run) -> list[tuple[bool, str]]:
    """(is_error, text) of the run's browser tool results, in order."""
    return [
        (event.payload["is_error"], event.payload["content"])
        for event in events(run, "agent.tool_result")
        if event.payload["name"] != "done"
    ]


def test_the_agent_cannot_reach_metadata_private_or_unlisted_loopback_addresses(acme, fault_site, messages_stub):
    port = fault_site.server_address[1]
    # The fault worker allows the private host `localhost` only: 127.0.0.1 is the same server, by another name.
    unlisted_loopback = f"http://127.0.0.1:{port}/runtime_shop.html"
    messages_stub.agent(
        browser("navigate", url="http://169.254.169.254/latest/meta-data/iam/"),
        browser("navigate", url="http://10.0.0.1/admin"),
        browser("navigate", url=unlisted_loopback),
        browser("navigate", url=f"{site_url(fault_site)}/runtime_shop.html"),
        done(True, "Only the allowed host answered."),
    )
    run = finished(launch(acme, queue=FAULT_QUEUE))

    assert run.status == Run.Status.SUCCEEDED
    results = refusals(run)
    assert [is_error for is_error, _ in results] == [True, True, True, False]
    assert REFUSED in results[0][1] and "169.254.169.254 is a cloud metadata address" in results[0][1]
    assert REFUSED in results[1][1] and "10.0.0.1 is a private address" in results[1][1]
    assert REFUSED in results[2][1] and "127.0.0.1 is a loopback address" in results[2][1]
    assert "Runtime shop" in results[3][1]
    # Refused before any connection: the server behind 127.0.0.1 never heard from the refused navigation.
    hosts = {host for _, host, path, _ in fault_site.seen() if path == "/runtime_shop.html"}
    assert f"127.0.0.1:{port}" not in hosts
    assert f"localhost:{port}" in hosts
    # The model read the refusal as a tool error it can act on.
    refused_results = [
        block
        for request in messages_stub.requests
        for message in request["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result" and block.get("is_error")
    ]
    assert refused_results
    # the operator sees each refusal as a network.blocked event with the URL and the reason
    blocked = [(event.payload["url"], event.payload["reason"]) for event in events(run, "network.blocked")]
    assert ("http://169.254.169.254/latest/meta-data/iam/", "169.254.169.254 is a cloud metadata address") in blocked
    assert (unlisted_loopback, "127.0.0.1 is a loopback address") in blocked


def test_allowed_domains_restrict_the_run_to_its_hosts(acme, fault_site, messages_stub):
    messages_stub.agent(
        browser("navigate", url=f"{site_url(fault_site)}/runtime_shop.html"),
        browser("navigate", url="https://example.com/"),
        browser("navigate", url="https://localhost.evil.example/"),
        done(True, "Stayed on the allowed host."),
    )
    run = finished(launch(acme, queue=FAULT_QUEUE, allowed_domains=["localhost"]))

    results = refusals(run)
    assert [is_error for is_error, _ in results] == [False, True, True]
    assert "example.com is not in the allowed domains" in results[1][1]
    assert "localhost.evil.example is not in the allowed domains" in results[2][1]
    assert run.status == Run.Status.SUCCEEDED
