"""Waiting for a person never looks like a hung worker: the run's heartbeat goes on through the wait, however long,
and the wait is not counted toward the point where the heartbeat gives up."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.models import Run
from runtime.heartbeats import Heartbeat
from tests.support.factories import make_run
from tests.support.launching import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_heartbeat_beats_through_a_wait_past_its_give_up_time(acme, settings):
    settings.RUN_STALE_AFTER_SECONDS = 5  # a beat a second
    stale = timezone.now() - timedelta(hours=1)
    run = make_run(acme, status=Run.Status.RUNNING, heartbeat_at=stale)
    heartbeat = Heartbeat(run, run.handovers)
    heartbeat.give_up_at = time.monotonic() + 0.5  # a loop past its time limit: a hung one, were it not waiting
    try:
        with heartbeat.waiting_for_person():
            heartbeat.start()
            time.sleep(2.5)  # past give_up_at while a person is awaited
            stale = Run.objects.get(pk=run.pk).heartbeat_at
            wait_for(lambda: Run.objects.get(pk=run.pk).heartbeat_at > stale, timeout=5, message="a later beat")
            assert heartbeat.beating
        # The wait's length moved the give-up time on: the loop gets all its own time back.
        assert heartbeat.give_up_at > time.monotonic()
    finally:
        heartbeat.stop()
