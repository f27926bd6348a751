"""Failures that are not the agent's (model, browser, cancel), and the browser state a session carries between runs."""

import threading

import pytest

from agent_platform.models import ModelRequest
from runs import lifecycle
from runs.models import Run
from runs.secret_box import unseal
from scripted_api.wire import error_reply
from tests import messages_stub as stub_fixtures
from tests.support import launching, workers
from tests.support.factories import make_run, make_session
from tests.support.launching import events, finished, launch, wait_for
from tests.support.replies import browser, done

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("runtime_worker", "transactional_db")]


def overloaded() -> object:
    # retry-after-ms keeps the SDK's backoff short
    return error_reply(529, "overloaded_error", "Overloaded", retry_after_seconds=0.01)


def test_an_overloaded_model_is_retried_and_the_run_goes_on(acme, site, messages_stub):
    messages_stub.agent(overloaded(), done(True, "Done after a retry."))
    run = launch(acme, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert len(messages_stub.requests) == 2
    assert ModelRequest.objects.filter(run=run).count() == 1  # the retry is one request, billed once


def test_retries_exhausted_fail_the_run_with_model_error_and_keep_its_events(acme, site, messages_stub):
    messages_stub.agent(browser("get_page_text"), overloaded(), overloaded(), overloaded())
    run = launch(acme, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.MODEL_ERROR
    assert "529" in run.error_message and "overloaded" in run.error_message
    assert len(messages_stub.requests) == 4  # the first turn, then one request and its two retries
    types = [event.type for event in events(run)]
    assert types[:5] == ["run.started", "agent.usage", "agent.tool_use", "agent.tool_result", "agent.final_view"]
    assert types[-1] == "run.finished"
    assert events(run, "run.finished")[0].payload["error_code"] == "model_error"


def test_a_cancel_stops_the_run_at_the_next_safe_point(acme, site, messages_stub):
    cancelled = threading.Event()

    def slow_second_turn(request: dict) -> dict:
        # The operator cancels while the model is thinking: the model answers once the cancel is requested.
        assert cancelled.wait(timeout=30), "the test never requested the cancel"
        return browser("navigate", url=f"{site}/index.html")

    messages_stub.agent(browser("wait", duration=0.1), slow_second_turn)
    messages_stub.set_fallback(browser("wait", duration=0.1))
    run = launch(acme, start_url=f"{site}/runtime_shop.html")
    wait_for(lambda: events(run, "agent.tool_result"), timeout=30, message="the first action")

    lifecycle.request_cancel(run)
    cancelled.set()
    run = finished(run)

    assert run.status == Run.Status.CANCELLED
    assert run.error_code == Run.ErrorCode.CANCELLED
    assert "Cancelled by an operator after 1 action turn" in run.error_message
    assert len(events(run, "agent.tool_use")) == 2
    assert len(events(run, "agent.tool_result")) == 1  # the navigate asked for after the cancel never ran
    assert events(run, "agent.final_view")[0].payload["url"] == f"{site}/runtime_shop.html"
    assert len(messages_stub.requests) == 2


def test_a_follow_up_run_starts_with_the_sessions_cookies_and_storage(acme, site, messages_stub):
    session = make_session(acme)
    messages_stub.agent(done(True, "Signed in."))
    first = finished(launch(acme, session=session, start_url=f"{site}/state.html?set"))
    assert first.status == Run.Status.SUCCEEDED
    session.refresh_from_db()
    state = unseal(session.browser_state)  # sealed at rest, like a profile's
    assert state is not None and any(cookie["name"] == "session_token" for cookie in state["cookies"])

    messages_stub.agent(browser("get_page_text"), done(True, "Still signed in."))
    follow_up = finished(launch(acme, session=session, start_url=f"{site}/state.html"))

    assert follow_up.status == Run.Status.SUCCEEDED
    page = events(follow_up, "agent.tool_result")[0].payload["content"]
    assert "cookie: session_token=abc123" in page
    assert "stored: kept in local storage" in page


short_limit_worker = workers.short_limit_worker


@pytest.mark.usefixtures("short_limit_worker")
def test_a_run_past_its_wall_clock_limit_fails_with_timeout(acme, site, messages_stub):
    messages_stub.set_fallback(browser("wait", duration=3))
    run = launching.enqueue(make_run(acme, start_url=f"{site}/runtime_shop.html"), queue=workers.SHORT_LIMIT_QUEUE)

    run = finished(run, timeout=40)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.TIMEOUT
    assert f"time limit of {workers.SHORT_LIMIT_SECONDS} s" in run.error_message
    assert run.signals["turns"] >= 1
    assert run.scripted is True  # SCRIPTED_MODEL labels the runs of that worker
    assert events(run, "run.started")[0].payload["scripted"] is True
    assert (run.finished_at - run.started_at).total_seconds() < workers.SHORT_LIMIT_SECONDS + 8
