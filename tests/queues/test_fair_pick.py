"""Workers pick across workspaces fairly (runs.queueing.fairest): one workspace's 200 queued runs do not hold another
workspace's single run back by more than one worker slot. A real worker of one thread, the strict stub."""

import pytest
from django.utils import timezone

from runs import lifecycle, queueing, tasks
from runs.launch import launch_run
from runs.models import Run
from tests.support.launching import wait_for
from tests.support.replies import done
from tests.support.workers import WorkerProcess, worker_environment

pytestmark = pytest.mark.django_db(transaction=True)

FAIR_QUEUE = "fair-pick-tests"
BATCH = 200


@pytest.fixture
def admitted(monkeypatch):
    """Launch as the API does, admitted, with no message sent: no worker of the session may claim these runs while
    the test asks the fair pick about them. (In a transactional test a launch's on-commit admission runs at once.)"""
    monkeypatch.setattr(lifecycle, "enqueue", lambda run_pk: None)

    def launch(workspace, **fields) -> Run:
        run = launch_run(workspace, **fields).run
        run.refresh_from_db()
        assert run.admitted_at is not None
        return run

    return launch


def test_the_fairest_run_is_of_the_workspace_with_fewest_running_then_least_recently_started(acme, umbrella, admitted):
    acme.max_concurrent_runs = umbrella.max_concurrent_runs = 10
    acme.save()
    umbrella.save()
    a_running = admitted(acme, task="A, running")
    a_queued = admitted(acme, task="A, queued")
    b_queued = admitted(umbrella, task="B, queued")
    Run.objects.filter(pk=a_running.pk).update(status=Run.Status.RUNNING, started_at=timezone.now())

    assert queueing.fairest(set()) == b_queued.pk  # umbrella runs nothing, acme one run
    Run.objects.filter(pk=a_running.pk).update(status=Run.Status.SUCCEEDED)
    # Neither runs anything now: umbrella never started a run, acme just did.
    assert queueing.fairest(set()) == b_queued.pk
    assert queueing.fairest({b_queued.pk}) == a_queued.pk


def test_a_follow_up_behind_its_sessions_earlier_run_is_not_picked(acme, admitted):
    first = admitted(acme, task="First")
    follow_up = admitted(acme, task="Then", session_id=first.session.public_id)

    assert queueing.fairest(set()) == first.pk
    assert queueing.fairest({first.pk}) is None  # admitted, but not ready while the first is queued or running
    Run.objects.filter(pk=first.pk).update(status=Run.Status.SUCCEEDED)
    assert queueing.fairest(set()) == follow_up.pk


@pytest.mark.slow
def test_another_workspaces_run_starts_within_one_slot_of_a_200_run_batch(
    request, acme, umbrella, messages_stub, tmp_path, monkeypatch
):
    messages_stub.set_fallback(lambda request: done(True, "Nothing to do."))
    acme.max_concurrent_runs = BATCH  # every run of the batch admitted: its 200 messages are all in the queue
    acme.save()
    # Launched as the API launches, each admitted run's message sent fair as lifecycle.enqueue sends it, to this
    # test's one-thread worker instead of the shared queue.
    monkeypatch.setattr(
        lifecycle,
        "enqueue",
        lambda run_pk: tasks.execute_run.apply_async(args=[run_pk], kwargs={"fair": True}, queue=FAIR_QUEUE),
    )

    def fair_messages(workspace, count: int) -> list[Run]:
        return [launch_run(workspace, task=f"{workspace.name} task {index}").run for index in range(count)]

    batch = fair_messages(acme, BATCH)
    (single,) = fair_messages(umbrella, 1)
    # Every message is in the queue before a worker slot frees: the worker starts now.
    worker = WorkerProcess(worker_environment(), tmp_path / "worker.log", concurrency=1, queues=FAIR_QUEUE).start()
    request.addfinalizer(worker.stop)

    wait_for(lambda: Run.objects.get(pk=single.pk).started_at, timeout=120, message="the single run to start")
    single.refresh_from_db()
    # Counted on this test's worker only: a message of an earlier test still in the shared queue may have had the
    # session's worker take one of these runs (any admitted run is any free slot's to take).
    started_before = Run.objects.filter(
        pk__in=[run.pk for run in batch], started_at__lt=single.started_at, worker__startswith=f"tests-{FAIR_QUEUE}-"
    ).count()
    assert started_before <= 1, f"{started_before} of the batch's runs started before the other workspace's run"

    # The rest of the batch is cancelled (a running one stops at its next safe point); their messages find nothing
    # left to claim, and every run ends.
    for run in batch:
        lifecycle.request_cancel(run)
    everything = [run.pk for run in [*batch, single]]
    wait_for(
        lambda: Run.objects.filter(pk__in=everything).active().count() == 0, timeout=90, message="every run to end"
    )
    single.refresh_from_db()
    assert single.status == Run.Status.SUCCEEDED
