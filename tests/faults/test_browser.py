"""A page that hangs the browser (an endless loop in its renderer): the run fails with browser_error in bounded time,
the worker is not stuck, and the next run gets a working browser. A Chromium crash is tested in
tests/runtime/test_failures.py (test_a_browser_crash_fails_the_run_with_browser_error_and_the_next_run_gets_a_fresh_browser)."""

import time

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


def test_a_hung_page_fails_the_run_with_browser_error_and_the_next_run_works(acme, fault_site, messages_stub):
    # The page starts spinning 2 s after its script runs: late enough that opening it finishes even on a loaded
    # machine (at 200 ms the open itself could hang), early enough for the agent, which keeps reading, to meet it.
    messages_stub.set_fallback(browser("get_page_text"), "agent")
    started = time.monotonic()
    run = finished(launch(acme, queue=FAULT_QUEUE, start_url=f"{site_url(fault_site)}/hang.html"), timeout=120)
    took = time.monotonic() - started

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.BROWSER_ERROR, run.error_message
    assert "did not finish a get_page_text action" in run.error_message
    assert took < HANG_BOUND_SECONDS, f"the run took {took:.0f}s to end"
    assert {event.payload["name"] for event in events(run, "agent.tool_use")} == {"get_page_text"}

    messages_stub.reset()
    messages_stub.agent(browser("get_page_text"), done(True, "Fine again."))
    after = finished(launch(acme, queue=FAULT_QUEUE, start_url=f"{site_url(fault_site)}/runtime_shop.html"))
    assert after.status == Run.Status.SUCCEEDED
    assert "Kettle" in events(after, "agent.tool_result")[0].payload["content"]
