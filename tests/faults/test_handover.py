"""The reaper and a run's handovers in the database (runs.handover): a run whose worker is lost is handed over, claimed
once by the next worker, not taken for lost again while it waits, and past RUN_MAX_RECOVERIES lost workers it ends
worker_lost. The continuation's message is captured, not sent: tests/faults/test_worker_lost.py has real workers."""

from datetime import timedelta

import pytest

from runs import handover, lifecycle
from runs.models import Run
from tests.support.factories import make_run
from tests.support.launching import events

pytestmark = pytest.mark.django_db

STALE_AFTER_SECONDS = 5


def test_a_run_lost_more_than_its_limit_ends_worker_lost(acme, settings, django_capture_on_commit_callbacks):
    settings.RUN_MAX_RECOVERIES = 2
    run = make_run(acme, status=Run.Status.RUNNING, worker="celery@gone", queue="runs-eu")
    stale = timedelta(seconds=STALE_AFTER_SECONDS)
    for loss in (1, 2):
        Run.objects.filter(pk=run.pk).update(heartbeat_at=run.created_at - timedelta(hours=1))
        with django_capture_on_commit_callbacks() as sent:
            assert lifecycle.reap_stale_runs(stale) == [run.public_id]
        continuation = [callback for callback in sent if getattr(callback, "func", None) is handover.send_continuation]
        assert [callback.args for callback in continuation] == [(run.pk, "runs-eu")], "the continuation's message"
        run.refresh_from_db()
        assert (run.status, run.worker_losses, run.handovers, run.worker) == (Run.Status.RUNNING, loss, loss, "")
        assert lifecycle.reap_stale_runs(stale) == [], "a run waiting to be continued is not lost again"
        assert handover.claim_handed_over(run.pk, f"celery@next-{loss}", "runs-eu") is not None
        assert handover.claim_handed_over(run.pk, "celery@late") is None, "claimed once"
    Run.objects.filter(pk=run.pk).update(heartbeat_at=run.created_at - timedelta(hours=1))
    assert lifecycle.reap_stale_runs(stale) == [run.public_id]
    run.refresh_from_db()
    assert (run.status, run.error_code) == (Run.Status.FAILED, Run.ErrorCode.WORKER_LOST)
    assert "continued after 2 lost workers, its limit (RUN_MAX_RECOVERIES=2)" in run.error_message
    assert [event.type for event in events(run) if event.type.startswith("run.worker")] == ["run.worker_lost"] * 2


def test_a_cancel_ends_a_run_waiting_to_be_continued_at_once(acme, django_capture_on_commit_callbacks):
    run = make_run(acme, status=Run.Status.RUNNING, worker="celery@gone")
    with django_capture_on_commit_callbacks():
        assert handover.hand_over(run, handovers=0, cause=handover.WORKER_LOST, worker="celery@gone")
    lifecycle.request_cancel(run)
    assert (run.status, run.error_code) == (Run.Status.CANCELLED, Run.ErrorCode.CANCELLED)
    assert handover.claim_handed_over(run.pk, "celery@next") is None
