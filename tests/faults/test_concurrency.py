"""Twenty concurrent runs through one worker of four threads: every event there, seq gap-free, no run lost or doubled."""

import pytest

from runs.models import Event, Run
from tests import messages_stub as stub_fixtures
from tests.support import sites, workers
from tests.support.launching import launch, wait_for
from tests.support.replies import browser, done
from tests.support.sites import site_url
from tests.support.workers import FAULT_QUEUE

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_worker = workers.fault_worker
fault_site = sites.fault_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("fault_worker", "transactional_db")]

RUNS = 20


def short_trajectory(request: dict) -> dict:
    """Any run's next step from its own conversation: read the page, then finish; so replies cannot cross runs."""
    replied = sum(1 for message in request["messages"] if message["role"] == "assistant")
    if replied == 0:
        return browser("get_page_text")
    task = request["messages"][0]["content"][0]["text"].splitlines()[0]
    return done(True, f"Read the page for {task}")


def test_twenty_concurrent_runs_lose_and_duplicate_nothing(acme, fault_site, messages_stub):
    messages_stub.set_fallback(short_trajectory)
    runs = [
        launch(
            acme,
            queue=FAULT_QUEUE,
            task=f"Concurrent task {index}",
            start_url=f"{site_url(fault_site)}/runtime_shop.html",
        )
        for index in range(RUNS)
    ]

    wait_for(
        lambda: Run.objects.filter(pk__in=[run.pk for run in runs]).finished().count() == RUNS,
        timeout=90,
        interval=0.5,
        message="all twenty runs to finish",
    )

    for run in runs:
        run.refresh_from_db()
        assert run.status == Run.Status.SUCCEEDED, (run.public_id, run.error_code, run.error_message)
        assert run.output == f"Read the page for {run.task}"  # its own conversation, not another run's
        events = list(Event.objects.filter(run=run).order_by("seq"))
        assert [event.seq for event in events] == list(range(1, run.last_seq + 1))
        types = [event.type for event in events]
        assert types.count("run.started") == 1 and types.count("run.finished") == 1
        assert types.count("agent.tool_use") == 2 and types.count("agent.tool_result") == 2
        assert types.count("agent.usage") == 2
        assert "Kettle" in events[types.index("agent.tool_result")].payload["content"]
    # Two model requests per run: no run was executed twice.
    assert len(messages_stub.requests) == 2 * RUNS
