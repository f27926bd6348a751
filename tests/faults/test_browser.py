"""A page that hangs the browser (an endless loop in its renderer): the run fails with browser_error in bounded time,
the worker is not stuck, and the next run gets a working browser. A Chromium crash is tested in
tests/runtime/test_failures.py (test_a_browser_crash_fails_the_run_with_browser_error_and_the_next_run_gets_a_fresh_browser)."""

import http.server
import threading
import time
from collections.abc import Iterator
from typing import Any

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
