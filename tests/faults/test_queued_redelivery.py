"""A queued run whose broker message was lost: the reaper enqueues it again after RUN_QUEUED_REDELIVER_SECONDS, says
so in an event, and the run is executed once, even when the lost message turns up again."""

from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from agent_platform import broker
from runs import lifecycle
from runs.models import Run
from runs.tasks import execute_run
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.factories import make_run
from tests.support.launching import events, finished
from tests.support.replies import done
from tests.support.workers import FAULT_QUEUE

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_worker = workers.fault_worker

pytestmark = [pytest.mark.worker, pytest.mark.usefixtures("fault_worker", "transactional_db")]

LOST_QUEUE = "nobody-consumes-this"


def test_a_queued_run_whose_message_was_deleted_is_enqueued_again_and_runs_once(acme, messages_stub, monkeypatch):
    monkeypatch.setattr(
        execute_run, "delay", lambda pk, **fair: execute_run.apply_async(args=[pk], kwargs=fair, queue=FAULT_QUEUE)
    )
    messages_stub.agent(done(True, "Ran once."))
    run = make_run(acme)
    execute_run.apply_async(args=[run.pk], queue=LOST_QUEUE)
    broker = redis.Redis.from_url(settings.REDIS_URL)
    assert broker.llen(LOST_QUEUE) == 1
    broker.delete(LOST_QUEUE)  # what a Redis restart without persistence does to it
    Run.objects.filter(pk=run.pk).update(admitted_at=timezone.now() - timedelta(seconds=400))

    assert lifecycle.redeliver_queued_runs() == [run.public_id]
    assert lifecycle.redeliver_queued_runs() == []  # once per period, not on every reaper pass
    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    (requeued,) = events(run, "run.requeued")
    assert requeued.payload["waited_seconds"] >= 400
    assert [event.type for event in events(run)][:2] == ["run.requeued", "run.started"]
    assert len(events(run, "run.started")) == 1
    assert len([request for request in messages_stub.requests if request.get("tools")]) == 1

    # the lost message turns up after all: the worker finds the run claimed and does nothing
    execute_run.apply_async(args=[run.pk], queue=FAULT_QUEUE)
    execute_run.apply_async(args=[run.pk], queue=FAULT_QUEUE)
    later = make_run(acme)  # a run queued behind them proves the worker went past both duplicates
    messages_stub.agent(done(True, "The next run."))
    execute_run.apply_async(args=[later.pk], queue=FAULT_QUEUE)
    assert finished(later).status == Run.Status.SUCCEEDED
    assert len(events(run, "run.started")) == 1
    assert lifecycle.redeliver_queued_runs(timedelta(seconds=0)) == []  # a run that is no longer queued is left alone


def test_a_run_queued_less_than_the_delay_is_left_to_its_message(acme, settings):
    run = make_run(acme)
    settings.RUN_QUEUED_REDELIVER_SECONDS = 300

    assert lifecycle.redeliver_queued_runs() == []
    assert events(run, "run.requeued") == []


def test_after_a_broker_restart_the_first_to_notice_enqueues_every_admitted_run_again_at_once(
    acme, messages_stub, monkeypatch
):
    """The marker went with the queues (a restart without persistence; here deleted, as the restart would): a run
    admitted a moment ago is sent again without waiting RUN_QUEUED_REDELIVER_SECONDS, once however many workers and
    reaper passes notice; tests/faults/test_redis.py restarts a real Redis under a worker."""
    monkeypatch.setattr(
        execute_run, "delay", lambda pk, **fair: execute_run.apply_async(args=[pk], kwargs=fair, queue=FAULT_QUEUE)
    )
    messages_stub.agent(done(True, "Ran once."))
    run = make_run(acme)
    redis.Redis.from_url(settings.REDIS_URL).delete(broker.MARKER_KEY)

    assert lifecycle.redeliver_after_broker_restart() == [run.public_id]
    assert lifecycle.redeliver_after_broker_restart() == []  # the marker stands again: the next to look does nothing
    assert finished(run).status == Run.Status.SUCCEEDED
    (requeued,) = events(run, "run.requeued")
    assert requeued.payload["reason"] == "the broker restarted and lost its queue"
    assert len(events(run, "run.started")) == 1
