"""A run's background lane and a turn's record in one transaction: what the model does not wait for, done in order
and complete, with the live view, the timeline and the judge still seeing every event and screenshot."""

import threading
import time
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agent_platform.models import ModelRequest
from runs.models import Event, Run
from runs.screenshots import storage_path
from runs.usage import Answered, record_turn
from runtime.lane import Lane, LaneFailed
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.factories import make_run
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker

USAGE = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0}


def test_the_lane_runs_jobs_in_the_order_they_came_on_one_thread_of_its_own() -> None:
    lane = Lane("test-order", capacity=2)
    seen: list[tuple[int, str]] = []
    try:
        for number in range(10):
            lane.submit(lambda number=number: seen.append((number, threading.current_thread().name)))
        lane.flush()
    finally:
        lane.close()

    assert [number for number, _ in seen] == list(range(10))
    assert {name for _, name in seen} == {"lane-test-order"}


def test_flush_waits_for_a_slow_job_and_close_runs_what_is_queued() -> None:
    lane = Lane("test-flush")
    finished_at: list[float] = []
    lane.submit(lambda: (time.sleep(0.2), finished_at.append(time.monotonic())))

    lane.flush()
    flushed_at = time.monotonic()
    lane.submit(lambda: finished_at.append(time.monotonic()))
    lane.close()
    lane.close()  # idempotent

    assert len(finished_at) == 2 and finished_at[0] <= flushed_at


def test_wait_for_a_mark_returns_once_the_jobs_before_it_ran_while_a_later_one_still_runs() -> None:
    lane = Lane("test-mark")
    ran: list[str] = []
    release = threading.Event()
    try:
        lane.submit(lambda: ran.append("earlier turn"))
        mark = lane.submitted
        lane.submit(lambda: (release.wait(10), ran.append("last turn")))

        lane.wait_for(mark)  # returns while the last turn's job is still waiting
        assert ran == ["earlier turn"] and mark == 1 and lane.submitted == 2
        release.set()
        lane.wait_for(lane.submitted)
        assert ran == ["earlier turn", "last turn"]
    finally:
        release.set()
        lane.close()


def test_a_failed_job_stops_the_lane_and_the_loop_learns_of_it_at_its_next_hand_off() -> None:
    lane = Lane("test-failure")
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("the database went away")

    lane.submit(broken)
    lane.submit(lambda: ran.append("after the failure"))
    with pytest.raises(LaneFailed, match="the database went away"):
        lane.wait_for(lane.submitted)  # a job skipped after the failure counts as done: no waiting for ever
    with pytest.raises(LaneFailed, match="the database went away"):
        lane.flush()
    with pytest.raises(LaneFailed):
        lane.submit(lambda: ran.append("later"))
    lane.close()

    assert ran == []  # a record with a hole in it is not written on


def test_a_turn_is_recorded_in_one_transaction_with_its_seqs_taken_at_once(db, acme) -> None:
    run = make_run(acme)
    Run.objects.filter(pk=run.pk).update(last_seq=3)  # three events before this turn
    run.refresh_from_db()
    at = timezone.now()
    turn = [
        ("agent.tool_use", {"id": "toolu_1", "name": "read_page"}, at),
        ("agent.tool_result", {"tool_use_id": "toolu_1", "screenshot_url": "/x.jpg"}, at),
    ]

    with CaptureQueriesContext(connection) as queries:
        record_turn(
            run,
            answered=Answered("agent", "claude-sonnet-4-6", USAGE, at),
            events=turn,
            signals={"turns": 1, "max_turns": 5},
        )

    run.refresh_from_db()
    recorded = list(Event.objects.filter(run=run).order_by("seq"))
    assert [(event.seq, event.type) for event in recorded] == [
        (4, "agent.usage"),
        (5, "agent.tool_use"),
        (6, "agent.tool_result"),
    ]
    assert recorded[0].payload["input_tokens"] == 1200 and recorded[0].processed_at == at
    assert run.last_seq == 6 and run.usage_requests == 1 and run.usage_cache_read == 1000
    assert run.cost_usd == ModelRequest.objects.get(run=run).cost_usd > Decimal(0)
    assert run.signals == {"turns": 1, "max_turns": 5}
    writes = [query["sql"] for query in queries.captured_queries if not query["sql"].startswith("SELECT")]
    # the request's row and its day in the billing rollup, the run's totals and signals, the seqs, the events: one
    # statement each
    assert len([sql for sql in writes if not sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))]) == 5, writes


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("runtime_worker", "transactional_db")
def test_every_turn_reaches_the_record_in_order_with_its_live_view_image(
    acme, alice_client, site, messages_stub, runtime_worker
):
    messages_stub.agent(
        browser("navigate", url=f"{site}/index.html"),
        browser("find", query="press me button"),
        browser("scroll", target={"type": "coordinate", "x": 100, "y": 100}, scroll_direction="down"),
        browser("navigate", url=f"{site}/runtime_shop.html"),
        done(True, "Walked."),
    )
    run = launch(acme, start_url=f"{site}/runtime_shop.html")

    run = finished(run)

    recorded = events(run)
    assert [event.seq for event in recorded] == list(range(1, len(recorded) + 1))  # gap-free, each once
    types = [event.type for event in recorded]
    assert types[0] == "run.started" and types[-2:] == ["agent.final_view", "run.finished"]
    assert types.count("agent.usage") == 5 == run.usage_requests == ModelRequest.objects.filter(run=run).count()
    results = events(run, "agent.tool_result")
    assert [result.payload["name"] for result in results] == ["navigate", "find", "scroll", "navigate", "done"]
    for result in results[:4]:
        url = result.payload["screenshot_url"]
        assert url.endswith(".jpg"), result.payload
        run_id, name = url.rstrip("/").split("/")[-3], url.rstrip("/").split("/")[-1]
        assert (runtime_worker.media_root / storage_path(run_id, name)).read_bytes().startswith(b"\xff\xd8\xff")
    # each turn's usage comes first in its record, then what the reply did (an action's target, for recipes, before
    # its result)
    first_turn = types[types.index("agent.usage") : types.index("agent.tool_result") + 1]
    assert first_turn == ["agent.usage", "agent.tool_use", "agent.target", "agent.tool_result"]
    assert run.signals["turns"] == 4
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert all(result.payload["screenshot_url"] in page for result in results[:4])
