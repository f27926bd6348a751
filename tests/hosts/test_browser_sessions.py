"""A browser session across hosts: the client (the test process, outside every namespace) knows only the web host's
address; the browser runs on a worker host; the CDP connection goes client → web host → the worker host's relay →
its Chromium (docs/browsers.md, docs/scaling.md). The hosts are tests/hosts' own (conftest.py), shared with
test_four_hosts.py.

Needs root, and runs in the PostgreSQL run of `make test` only (tests/hosts/conftest.py).
"""

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

from tests.support import hosts, processes
from tests.support.browser_sessions import BrowsersApi
from tests.support.launching import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.worker, pytest.mark.browser]

# Upper bounds on a loaded machine: a session's Chromium starting, the client's CDP connection ending after a stop.
CONNECT_TIMEOUT_MS = 60_000
END_TIMEOUT_SECONDS = 60


def session_chromium(worker_host: hosts.WorkerHost) -> list[int]:
    """A browser session's Chromium on the worker host (its browser process and every process below it): only a
    session's Chromium opens a DevTools port (runtime.browser_sessions.SESSION_ARGS), a run's does not."""
    found: list[int] = []
    for pid in worker_host.host.pids():
        try:
            arguments = processes.command_line(pid)
        except OSError:
            continue
        if b"--remote-debugging-address=127.0.0.1" in arguments and not any(
            a.startswith(b"--type=") for a in arguments
        ):
            found += [pid, *processes.descendants(pid)]
    return found


def test_a_client_outside_drives_a_worker_hosts_browser_through_the_web_hosts_address(
    pages_site, services, web, worker_hosts
):
    api = BrowsersApi(web.url, web.api_key)
    created = api.create()
    session = api.wait_for(created["id"], ("running", "failed", "stopped"), timeout=hosts.START_TIMEOUT_SECONDS)
    assert session["status"] == "running", session
    # The client is given the web host's public address, nothing of the worker host's.
    assert session["cdp_url"].startswith(f"ws://{web.host.address}:{hosts.WEB_PORT}/browsers/{session['id']}/cdp/")

    # The browser is on a worker host, whose relay listens on its own address (the one it reaches Redis from), not
    # loopback: the web host connects to it there.
    ((worker, relay_address),) = services.query(
        "SELECT worker, relay_address FROM browsers_browsersession WHERE uuid = %s::uuid",
        session["id"].removeprefix("brs_"),
    )
    running_on = next(worker_host for worker_host in worker_hosts if worker_host.name == worker)
    assert relay_address.rpartition(":")[0] == running_on.host.address, relay_address
    chromium = session_chromium(running_on)
    assert chromium, "the session's own Chromium on its worker host"

    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_url"], timeout=CONNECT_TIMEOUT_MS)
        page = browser.contexts[0].new_page()
        page.goto(f"{pages_site}/runtime_shop.html")
        assert "Runtime shop" in page.inner_text("h1")
        assert page.evaluate("location.href") == f"{pages_site}/runtime_shop.html"

        api.stop(session["id"])

        def disconnected() -> bool:
            try:
                page.evaluate("1")
            except PlaywrightError:
                return True
            return False

        wait_for(disconnected, timeout=END_TIMEOUT_SECONDS, message="the CDP connection's end after the stop")
        assert not browser.is_connected()

    ended = api.wait_for(session["id"], ("stopped", "failed"), timeout=END_TIMEOUT_SECONDS)
    assert ended["status"] == "stopped" and ended["stop_reason"] == "requested", ended
    assert ended["cdp_url"] is None
    events = api.events(session["id"])
    types = [event["type"] for event in events]
    assert types.index("browser.started") < types.index("browser.navigated") and types[-1] == "browser.ended", types
    assert any(
        event["type"] == "browser.navigated" and event["data"]["url"] == f"{pages_site}/runtime_shop.html"
        for event in events
    ), events

    # Every process of the session's Chromium is gone from the worker host; the worker itself runs on.
    wait_for(
        lambda: not any(processes.alive(pid) for pid in chromium),
        timeout=END_TIMEOUT_SECONDS,
        message="the session's Chromium processes' end on the worker host",
    )
    assert session_chromium(running_on) == []
    assert running_on.worker.process.poll() is None
