"""Waiting for a person on a worker whose input timeout (12 s) is longer than its runs' whole time limit (10 s): no
answer gives the agent "no one answered", a pause ends by itself, and neither wait makes the run time out or go
stale."""

import time
from datetime import timedelta

import pytest

from runs import human, lifecycle
from runs.models import Event, Run
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.launching import events, finished, launch, wait_for
from tests.support.live import slow
from tests.support.replies import browser, done, last_tool_result_text
from tests.support.workers import HUMAN_INPUT_TIMEOUT_SECONDS, HUMAN_STALE_AFTER_SECONDS, HUMAN_TIME_LIMIT_SECONDS

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
human_timeout_worker = workers.human_timeout_worker

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.usefixtures("human_timeout_worker", "transactional_db"),
]


def still_fresh_while_waiting(run: Run, seconds: float) -> None:
    """For `seconds`, the reaper (with the worker's stale threshold) finds nothing to reap: the run heartbeats."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert run.public_id not in lifecycle.reap_stale_runs(timedelta(seconds=HUMAN_STALE_AFTER_SECONDS))
        time.sleep(1)


def test_no_answer_in_time_tells_the_agent_no_one_answered_and_the_wait_never_times_the_run_out(
    acme, site, messages_stub
):
    messages_stub.agent(tool_use_reply("ask_human", {"question": "The code?", "secret": True}), done(True, "No code."))
    run = launch(acme, start_url=f"{site}/index.html", queue=workers.HUMAN_TIMEOUT_QUEUE)
    wait_for(lambda: Event.objects.filter(run=run, type="run.input_requested").exists(), timeout=60, message="ask")

    still_fresh_while_waiting(run, HUMAN_TIME_LIMIT_SECONDS + 1)  # past the run's whole time limit
    run = finished(run, timeout=60)

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert len(messages_stub.requests) == 2
    told = last_tool_result_text(messages_stub.requests[1])
    assert told.startswith(f"No one answered within {HUMAN_INPUT_TIMEOUT_SECONDS} s.")
    assert [event.payload["after_seconds"] for event in events(run, "run.input_timed_out")] == [
        HUMAN_INPUT_TIMEOUT_SECONDS
    ]
    assert run.inputs.get().state == "timed_out"
    assert (run.finished_at - run.started_at).total_seconds() > HUMAN_TIME_LIMIT_SECONDS


def test_a_pause_no_one_hands_back_resumes_by_itself(acme, site, messages_stub):
    messages_stub.agent(slow(browser("get_page_text"), 2), done(True, "Done."))
    run = launch(acme, start_url=f"{site}/index.html", queue=workers.HUMAN_TIMEOUT_QUEUE)
    wait_for(lambda: len(messages_stub.requests) == 1, timeout=60, message="the agent's first request")
    human.pause(run, by="tests")

    still_fresh_while_waiting(run, HUMAN_TIME_LIMIT_SECONDS)
    assert len(messages_stub.requests) == 1, "a request was sent while the run was paused"
    run = finished(run, timeout=60)

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert [event.payload for event in events(run, "run.resumed")] == [{"by": "timeout", "note": ""}]
    second = messages_stub.requests[1]["messages"][-1]["content"]
    assert "resumed by itself" in " ".join(block.get("text", "") for block in second if block["type"] == "text")
