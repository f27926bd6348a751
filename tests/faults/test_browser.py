"""A page that hangs the browser (an endless loop in its renderer): the run fails with browser_error in bounded time,
the worker is not stuck, and the next run gets a working browser. A browser lost mid-run (its tab's renderer killed,
or Chromium itself) is noticed at once and the run goes on in a fresh tab or browser, up to RUN_MAX_RECOVERIES."""

import http.server
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from runs.models import Run
from runtime.run_browser import BROWSER_CALL_MARGIN_SECONDS
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import sites, workers
from tests.support.launching import events, finished, launch, wait_for
from tests.support.processes import chromium_pids, renderer_pids
from tests.support.replies import browser, done, last_tool_result_text
from tests.support.sites import site_url
from tests.support.workers import FAULT_QUEUE

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_worker = workers.fault_worker
fault_site = sites.fault_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("fault_worker", "transactional_db")]

# The fault worker's BROWSER_ACTION_TIMEOUT_SECONDS is 1; the runtime adds its 20 s margin before it calls the
# browser hung, and closing the run must not wait on the hung page again.
HANG_BOUND_SECONDS = 45


# Loads normally and polls the test's server; once the test says so, it reports (synchronously) that it is
# spinning and then its renderer loops forever: the next action on it hangs, however fast the machine is.
HANG_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Hang</title></head><body>
<p>About to hang.</p><script>
const poll = setInterval(async () => {
  if ((await (await fetch("/hang-now")).text()) !== "yes") return;
  clearInterval(poll);
  const report = new XMLHttpRequest();
  report.open("POST", "/spinning", false);  // synchronous: the loop below starts before anything else can run
  report.send();
  for (;;) {}
}, 50);
</script></body></html>"""


class HangSite(http.server.ThreadingHTTPServer):
    """Serves the hanging page; `hang()` tells it to spin and returns once its renderer is inside the loop."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), HangHandler)
        self.told = threading.Event()
        self.spinning = threading.Event()

    def hang(self, timeout: float = 30) -> None:
        self.told.set()
        if not self.spinning.wait(timeout):
            raise AssertionError(f"the page did not start spinning within {timeout}s of being told to")


class HangHandler(http.server.BaseHTTPRequestHandler):
    server: HangSite

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def answer(self, body: str, content_type: str = "text/plain") -> None:
        data = body.encode()
        self.send_response(200)
        self.send_header("content-type", f"{content_type}; charset=utf-8")
        self.send_header("content-length", str(len(data)))
        self.send_header("cache-control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/hang.html":
            self.answer(HANG_PAGE, "text/html")
        else:
            self.answer("yes" if self.server.told.is_set() else "no")

    def do_POST(self) -> None:
        self.server.spinning.set()
        self.answer("")


@pytest.fixture
def hang_site() -> Iterator[HangSite]:
    server = HangSite()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_hung_page_fails_the_run_with_browser_error_and_the_next_run_works(
    acme, fault_site, hang_site, messages_stub
):
    # The start URL opens normally; while the agent's first request is with the model, the page is told to spin, and
    # the model answers once it spins: the agent's first action meets the hung renderer.
    def read_once_the_page_spins(request: dict) -> dict:
        hang_site.hang()
        return browser("get_page_text")

    messages_stub.agent(read_once_the_page_spins)
    messages_stub.set_fallback(browser("get_page_text"), "agent")
    started = time.monotonic()
    run = finished(
        launch(acme, queue=FAULT_QUEUE, start_url=f"http://localhost:{hang_site.server_address[1]}/hang.html"),
        timeout=120,
    )
    took = time.monotonic() - started

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.BROWSER_ERROR, run.error_message
    assert "did not finish a get_page_text action" in run.error_message
    assert took < HANG_BOUND_SECONDS, f"the run took {took:.0f}s to end"
    assert [event.payload["name"] for event in events(run, "agent.tool_use")] == ["get_page_text"]

    messages_stub.reset()
    messages_stub.agent(browser("get_page_text"), done(True, "Fine again."))
    after = finished(launch(acme, queue=FAULT_QUEUE, start_url=f"{site_url(fault_site)}/runtime_shop.html"))
    assert after.status == Run.Status.SUCCEEDED
    assert "Kettle" in events(after, "agent.tool_result")[0].payload["content"]


# --- a browser lost mid-run -------------------------------------------------------------------------------------

RESTARTED = "[notice] Your browser was restarted."


class CookieSite(http.server.ThreadingHTTPServer):
    """A page that sets a cookie on the first visit and greets it back after: whether a fresh tab or browser kept
    the run's state shows in the page's text."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), CookieHandler)

    def url(self) -> str:
        return f"http://localhost:{self.server_address[1]}/page"


class CookieHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        seen = "seen=yes" in (self.headers.get("cookie") or "")
        body = (b"<!doctype html><title>Cookies</title><p>" + (b"Welcome back." if seen else b"First visit.")) + b"</p>"
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        if not seen:
            self.send_header("set-cookie", "seen=yes; Path=/; Max-Age=3600")
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def cookie_site() -> Iterator[CookieSite]:
    server = CookieSite()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


class Killer:
    """Kills the fault worker's renderers or its Chromium from a scripted reply, as a crash would, and remembers when."""

    def __init__(self, worker: workers.WorkerProcess) -> None:
        self.root = worker.process.pid
        self.killed_at: list[float] = []

    def kill_renderers(self) -> None:
        pids = renderer_pids(self.root)
        assert pids, "the worker's Chromium has no renderer to crash"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        self.killed_at.append(time.time())

    def kill_browser(self) -> None:
        for pid in chromium_pids(self.root):
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not chromium_pids(self.root), timeout=30, message="Chromium to be gone")
        self.killed_at.append(time.time())

    def renderers(self, then: dict) -> Any:
        """A reply that crashes the worker's tabs, then answers `then`."""

        def reply(request: dict) -> dict:
            self.kill_renderers()
            return then

        return reply

    def browser(self, then: dict) -> Any:
        """A reply that kills the worker's Chromium, then answers `then`."""

        def reply(request: dict) -> dict:
            self.kill_browser()
            return then

        return reply


def agent_requests(messages_stub) -> list[dict]:
    return messages_stub.requests_for("agent")


def assert_recovered_at_once(run: Run, killer: Killer) -> None:
    """Each browser.restarted came within seconds of its kill, not after a step's timeout (the margin alone is 20 s)."""
    for event, killed_at in zip(events(run, "browser.restarted"), killer.killed_at, strict=True):
        assert event.processed_at.timestamp() - killed_at < BROWSER_CALL_MARGIN_SECONDS / 2, event.payload


def test_a_crashed_tab_is_reopened_at_its_url_in_the_same_session_and_the_run_succeeds(
    acme, fault_worker, cookie_site, messages_stub
):
    killer = Killer(fault_worker)
    messages_stub.agent(
        killer.renderers(then=browser("get_page_text")),
        browser("get_page_text"),
        done(True, "Read it after the crash."),
    )
    run = finished(launch(acme, queue=FAULT_QUEUE, start_url=cookie_site.url()), timeout=60)

    assert run.status == Run.Status.SUCCEEDED, (run.error_code, run.error_message)
    [restarted] = events(run, "browser.restarted")
    assert restarted.payload == {"cause": "renderer_crash", "url": cookie_site.url(), "recovery": 1}
    assert_recovered_at_once(run, killer)
    requests = agent_requests(messages_stub)
    notice = last_tool_result_text(requests[1])
    assert RESTARTED in notice and "tab crashed" in notice and cookie_site.url() in notice
    # the same context: the cookie of the first visit came with the reopened page
    assert "Welcome back." in last_tool_result_text(requests[2])
    results = events(run, "agent.tool_result")
    assert results[0].payload["is_error"] is True


def test_a_tab_crashed_before_an_extract_is_reopened_and_the_extract_answered_with_the_notice(
    acme, fault_worker, cookie_site, messages_stub
):
    killer = Killer(fault_worker)
    messages_stub.agent(
        killer.renderers(then=tool_use_reply("extract", {"query": "What does the page say?"})),
        done(True, "Went on."),
    )
    run = finished(launch(acme, queue=FAULT_QUEUE, start_url=cookie_site.url()), timeout=60)

    assert run.status == Run.Status.SUCCEEDED, (run.error_code, run.error_message)
    assert [event.payload["cause"] for event in events(run, "browser.restarted")] == ["renderer_crash"]
    notice = last_tool_result_text(agent_requests(messages_stub)[1])
    assert RESTARTED in notice and "extract action" in notice


def test_a_killed_chromium_is_relaunched_with_the_runs_saved_state_and_the_run_succeeds(
    acme, fault_worker, cookie_site, fault_site, messages_stub
):
    killer = Killer(fault_worker)
    messages_stub.agent(
        browser("get_page_text"),
        # the state after the first action turn was read on the lane before this second action ran
        browser("get_page_text"),
        killer.browser(then=browser("get_page_text")),
        browser("get_page_text"),
        done(True, "Read it after the browser came back."),
    )
    run = finished(launch(acme, queue=FAULT_QUEUE, start_url=cookie_site.url()), timeout=90)

    assert run.status == Run.Status.SUCCEEDED, (run.error_code, run.error_message)
    [restarted] = events(run, "browser.restarted")
    assert restarted.payload == {"cause": "browser_exit", "url": cookie_site.url(), "recovery": 1}
    assert_recovered_at_once(run, killer)
    requests = agent_requests(messages_stub)
    assert "First visit." in last_tool_result_text(requests[1])
    notice = last_tool_result_text(requests[3])
    assert RESTARTED in notice and "browser exited" in notice and cookie_site.url() in notice
    # a fresh browser, started from the state saved after the first turn: the cookie is there
    assert "Welcome back." in last_tool_result_text(requests[4])

    messages_stub.reset()
    messages_stub.agent(browser("get_page_text"), done(True, "Fine again."))
    after = finished(launch(acme, queue=FAULT_QUEUE, start_url=f"{site_url(fault_site)}/runtime_shop.html"))
    assert after.status == Run.Status.SUCCEEDED
    assert not events(after, "browser.restarted")


def test_a_browser_lost_more_often_than_the_recoveries_allow_ends_the_run_with_browser_error(
    acme, fault_worker, cookie_site, messages_stub
):
    killer = Killer(fault_worker)
    crash = killer.renderers(then=browser("get_page_text"))
    messages_stub.agent(crash, crash, crash)  # the fault worker keeps the default RUN_MAX_RECOVERIES, 2
    run = finished(launch(acme, queue=FAULT_QUEUE, start_url=cookie_site.url()), timeout=90)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.BROWSER_ERROR
    # The third kill of the renderers is seen as a crashed tab; once, on a loaded machine, it was seen as Chromium's
    # exit (why is not known yet): either is a loss past the limit.
    assert "RUN_MAX_RECOVERIES=2" in run.error_message, run.error_message
    assert "tab crashed" in run.error_message or "browser exited" in run.error_message, run.error_message
    assert [event.payload["recovery"] for event in events(run, "browser.restarted")] == [1, 2]
    assert len(agent_requests(messages_stub)) == 3


def test_runs_sharing_the_workers_chromium_each_recover_from_its_exit_on_one_relaunched_browser(
    acme, fault_worker, cookie_site, messages_stub
):
    killer = Killer(fault_worker)
    # Both runs have acted once and wait on the model when Chromium is killed under them.
    both_asking = threading.Barrier(2, action=killer.kill_browser, timeout=60)

    def reply(request: dict) -> dict:
        results = sum(
            1
            for message in request["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        )
        if results == 1:
            both_asking.wait()
        return browser("get_page_text") if results < 3 else done(True, "Went on after the browser came back.")

    messages_stub.set_fallback(reply, "agent")
    runs = [launch(acme, queue=FAULT_QUEUE, start_url=cookie_site.url()) for _ in range(2)]
    runs = [finished(run, timeout=90) for run in runs]

    for run in runs:
        assert run.status == Run.Status.SUCCEEDED, (run.error_code, run.error_message)
        assert [event.payload["cause"] for event in events(run, "browser.restarted")] == ["browser_exit"]
    assert len(chromium_pids(killer.root)) == 1, "both runs went on in the one relaunched Chromium"
