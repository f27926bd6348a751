"""The model API failing (500, a timeout, a dropped connection): retried as configured, then model_error, usage kept."""

import pytest

from agent_platform.models import ModelRequest
from runs.models import Run
from scripted_api.wire import WireError, dropped_connection, error_reply
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

# The fault worker allows two retries and waits two seconds for an answer (workers.fault_worker_environment).
ATTEMPTS = 3
FAILURES = {
    "http_500": (lambda: error_reply(500, "api_error", "Internal failure", retry_after_seconds=0.01), "HTTP 500"),
    # the stub answers after 3 s, past the worker's MODEL_TIMEOUT_SECONDS of 2
    "timeout": (lambda: WireError(529, "overloaded_error", "late", delay_seconds=3.0), "did not answer within 2s"),
    "dropped_connection": (lambda: dropped_connection(), "could not be reached"),
}


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_a_failing_model_is_retried_then_the_run_fails_with_model_error_keeping_earlier_usage(
    kind, acme, fault_site, messages_stub
):
    failure, message = FAILURES[kind]
    messages_stub.agent(browser("get_page_text"), *[failure() for _ in range(ATTEMPTS)])
    run = launch(acme, queue=FAULT_QUEUE, start_url=f"{site_url(fault_site)}/runtime_shop.html")

    run = finished(run)

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.MODEL_ERROR
    assert message in run.error_message
    assert len(messages_stub.requests) == 1 + ATTEMPTS  # the first turn, then one request and its two retries
    # The turn that completed is billed and reported; the failed request is not.
    assert ModelRequest.objects.filter(run=run).count() == 1
    assert run.usage_requests == 1 and run.usage_total > 0
    assert len(events(run, "agent.usage")) == 1
    assert events(run, "run.finished")[0].payload["error_code"] == "model_error"


@pytest.mark.parametrize("kind", ["http_500", "dropped_connection"])
def test_one_failure_is_retried_and_the_run_goes_on(kind, acme, fault_site, messages_stub):
    failure, _ = FAILURES[kind]
    messages_stub.agent(failure(), done(True, "Done after a retry."))
    run = finished(launch(acme, queue=FAULT_QUEUE, start_url=f"{site_url(fault_site)}/runtime_shop.html"))

    assert run.status == Run.Status.SUCCEEDED
    assert len(messages_stub.requests) == 2
    assert ModelRequest.objects.filter(run=run).count() == 1
