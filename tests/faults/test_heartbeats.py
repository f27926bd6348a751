"""One heartbeat writer per worker process: every run it holds beats in one statement, each only while it is still
this worker's (the handovers it was claimed under), and a run another worker took is told so, not beaten."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from runs import handover, lifecycle
from runs.models import Run
from runtime.heartbeats import Heartbeat, HeartbeatWriter
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db(transaction=True)

# A queue no worker consumes: a handover sends the run's continuation to its queue, and a session worker of this suite
# would take it there, continue the run and beat for it while this test reads who beat.
NOBODYS_QUEUE = "heartbeat-tests-nobody"


def stale_runs(workspace, count: int) -> list[Run]:
    stale = timezone.now() - timedelta(hours=1)
    return [
        make_run(workspace, status=Run.Status.RUNNING, heartbeat_at=stale, worker="celery@me", queue=NOBODYS_QUEUE)
        for _ in range(count)
    ]


def test_one_statement_beats_every_run_still_this_workers(acme):
    mine = stale_runs(acme, 3)
    taken = make_run(
        acme, status=Run.Status.RUNNING, heartbeat_at=timezone.now() - timedelta(hours=1), queue=NOBODYS_QUEUE
    )
    assert handover.hand_over(taken, handovers=0, cause=handover.WORKER_LOST, worker="celery@me")
    handover.claim_handed_over(taken.pk, "celery@other", NOBODYS_QUEUE)
    taken.refresh_from_db()
    other_beat = taken.heartbeat_at
    ended = make_run(acme, status=Run.Status.SUCCEEDED, heartbeat_at=timezone.now() - timedelta(hours=1))
    before = timezone.now()

    with CaptureQueriesContext(connection) as queries:
        superseded = lifecycle.heartbeats([(run.pk, 0) for run in [*mine, taken, ended]])

    assert superseded == {taken.pk}  # another worker's now; an ended run of this worker's is not superseded
    updates = [query for query in queries.captured_queries if query["sql"].startswith("UPDATE")]
    assert len(updates) == 1
    for run in mine:
        run.refresh_from_db()
        assert run.heartbeat_at >= before
    taken.refresh_from_db()
    assert taken.heartbeat_at == other_beat  # the new owner's heartbeat is not beaten over
    ended.refresh_from_db()
    assert ended.heartbeat_at < before


def test_the_writer_tells_a_superseded_run_and_stops_beating_it(acme):
    first, second = stale_runs(acme, 2)
    writer = HeartbeatWriter()
    beats = [Heartbeat(first, 0), Heartbeat(second, 0)]
    for beat in beats:
        writer._beats.add(beat)  # registered without the writer's thread: the test drives its rounds
    Run.objects.filter(pk=second.pk).update(handovers=1)  # another worker claimed it since

    writer.beat_now()

    assert not beats[0].superseded and beats[1].superseded
    assert writer.holds(beats[0]) and not writer.holds(beats[1])
    first.refresh_from_db()
    assert first.heartbeat_at > timezone.now() - timedelta(minutes=1)


def test_a_run_past_its_time_limit_stops_beating_unless_a_person_is_awaited(acme):
    hung, waiting = stale_runs(acme, 2)
    writer = HeartbeatWriter()
    beats = [Heartbeat(hung, 0), Heartbeat(waiting, 0)]
    for beat in beats:
        beat.give_up_at = 0  # past: a loop that overran its limit
        writer._beats.add(beat)
    with beats[1].waiting_for_person():
        writer.beat_now()

    assert not writer.holds(beats[0]) and writer.holds(beats[1])
    hung.refresh_from_db()
    waiting.refresh_from_db()
    assert hung.heartbeat_at < waiting.heartbeat_at
