"""Runs through a workspace's own proxy, end to end: a real worker, real Chromium, the strict Messages stub and real
upstream proxies (proxy.py with Basic credentials, pproxy as SOCKS5). The page is reached through the proxy, the
credentials appear nowhere, a private destination is still refused, and a failing proxy is a clear tool result and a
`network.proxy_error` event within seconds."""

import time
from collections.abc import Iterator

import pytest

from runs.models import Proxy, Run
from tests import messages_stub as stub_fixtures
from tests.support import upstream_proxies, workers
from tests.support.canaries import database_dump, dumped
from tests.support.factories import make_session
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done, last_tool_result_text
from tests.support.sites import free_port
from tests.support.upstream_proxies import UpstreamServer

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

PROXY_QUEUE = "proxy-tests"
CONNECT_TIMEOUT = 2

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("proxy_worker", "transactional_db")]


@pytest.fixture(scope="session")
def proxy_worker(request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory):
    """A worker whose installation allows proxies on this machine, with a short proxy timeout."""

    def environment() -> dict:
        return workers.worker_environment(
            {
                "PROXY_ALLOWED_PRIVATE_HOSTS": "127.0.0.1",
                "PROXY_CONNECT_TIMEOUT_SECONDS": str(CONNECT_TIMEOUT),
                "MEDIA_ROOT": str(tmp_path_factory.mktemp("proxy-media")),
            }
        )

    return workers.shared_worker(request, tmp_path_factory, django_db_blocker, "proxies", PROXY_QUEUE, environment)


@pytest.fixture(scope="module")
def http_proxy(tmp_path_factory) -> Iterator[UpstreamServer]:
    server = upstream_proxies.start_proxy_py(tmp_path_factory.mktemp("proxy-py"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def socks_proxy(tmp_path_factory) -> Iterator[UpstreamServer]:
    server = upstream_proxies.start_pproxy(tmp_path_factory.mktemp("pproxy"))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def loopback_proxies_allowed(settings):
    settings.PROXY_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]


def run_through(acme, api, url: str, **fields) -> Run:
    """A run of a session on a proxy added through the API, handed to the proxy worker."""
    added = api.post("/proxies", {"name": "test proxy", "url": url})
    assert added.status_code == 201, added.content
    proxy = Proxy.objects.get(public_id=added.json()["id"])
    return launch(acme, session=make_session(acme, proxy=proxy), queue=PROXY_QUEUE, **fields)


@pytest.mark.parametrize("kind", ["http", "socks5"])
def test_a_run_reaches_the_page_through_the_proxy_and_its_credentials_appear_nowhere(
    acme, api, alice_client, site, messages_stub, http_proxy, socks_proxy, proxy_worker, kind
):
    server = http_proxy if kind == "http" else socks_proxy
    port = site.rsplit(":", 1)[1]
    messages_stub.agent(browser("navigate", url=f"{site}/runtime_shop.html"), done(True, "Reached it."))

    run = finished(run_through(acme, api, server.url()))

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    result = last_tool_result_text(messages_stub.requests[1])
    assert "failed" not in result and "refused" not in result
    seen = f"CONNECT 127.0.0.1:{port}" if kind == "http" else f"-> 127.0.0.1:{port}"
    assert seen in server.log  # the proxy carried the page
    assert not events(run, "network.proxy_error")
    exposed = {
        "events": dumped([event.as_dict() for event in events(run)]),
        "model requests": dumped(messages_stub.requests),
        "run response": api.get(f"/runs/{run.public_id}").content.decode(),
        "proxies response": api.get("/proxies").content.decode(),
        "run page": alice_client.get(f"/runs/{run.public_id}/").content.decode(),
        "settings page": alice_client.get("/settings/").content.decode(),
        "worker log": proxy_worker.log_path.read_text(errors="replace"),
        "database dump": database_dump(),
    }
    for where, text in exposed.items():
        assert server.password not in text, f"the proxy's password appears in the {where}"


def test_a_private_destination_is_refused_with_the_proxy_configured(acme, api, site, messages_stub, http_proxy):
    port = site.rsplit(":", 1)[1]
    # the worker allows 127.0.0.1 as written; `localhost` is loopback by name, and the proxy could reach it
    messages_stub.agent(browser("navigate", url=f"http://localhost:{port}/runtime_shop.html"), done(False, "Refused."))

    run = finished(run_through(acme, api, http_proxy.url()))

    result = last_tool_result_text(messages_stub.requests[1])
    assert "Navigation refused by the network policy: localhost resolves to 127.0.0.1, a loopback address" in result
    assert events(run, "network.blocked")
    assert not events(run, "network.proxy_error")
    assert "localhost" not in http_proxy.log


@pytest.mark.parametrize("case", ["wrong password", "dead proxy"])
def test_a_failing_proxy_is_a_clear_tool_result_and_a_proxy_error_event(
    acme, api, site, messages_stub, http_proxy, case
):
    if case == "wrong password":
        url, address = http_proxy.url(password="not-the-pa55word"), f"http://127.0.0.1:{http_proxy.port}"
        reason = "the proxy refused the credentials (407 Proxy Authentication Required)"
    else:
        port = free_port()
        url, address = f"socks5://carol:dead-pa55@127.0.0.1:{port}", f"socks5://127.0.0.1:{port}"
        reason = "could not connect to the proxy: it refused the connection"
    messages_stub.agent(browser("navigate", url=f"{site}/runtime_shop.html"), done(False, "The proxy failed."))
    started = time.monotonic()

    run = finished(run_through(acme, api, url))

    assert time.monotonic() - started < 45
    result = last_tool_result_text(messages_stub.requests[1])
    assert f"the run's upstream proxy {address} failed: {reason}" in result
    (error,) = events(run, "network.proxy_error")
    assert error.payload["proxy"] == address
    assert error.payload["reason"].startswith(reason)
    text = dumped([event.as_dict() for event in events(run)])
    assert "not-the-pa55word" not in text and "dead-pa55" not in text and "carol" not in text


def test_a_queued_run_whose_proxy_was_deleted_fails_rather_than_go_out_directly(acme, api, site, messages_stub):
    added = api.post("/proxies", {"name": "gone soon", "url": "http://127.0.0.1:3128"}).json()
    session = make_session(acme, proxy=Proxy.objects.get(public_id=added["id"]))
    assert api._call("delete", f"/proxies/{added['id']}").status_code == 204

    run = finished(launch(acme, session=session, queue=PROXY_QUEUE, start_url=f"{site}/runtime_shop.html"))

    assert run.status == Run.Status.FAILED and run.error_code == Run.ErrorCode.BROWSER_ERROR
    assert f"The run's proxy cannot be used: the run's proxy {added['id']} (gone soon) was deleted" in run.error_message
    assert messages_stub.requests == []  # not a single model request, and no page opened
