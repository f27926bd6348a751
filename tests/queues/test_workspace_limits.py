"""A workspace's limits (runs.queueing): runs beyond its concurrency limit wait, in launch order, and go to the workers
as its runs end; a launch beyond its queued limit is refused; the queue's depth in the API and /metrics."""

from datetime import timedelta

import pytest
from django.utils import timezone

from runs import lifecycle, queueing
from runs.launch import launch_run
from runs.models import Event, Run
from tests.support.metrics import METRICS_TOKEN, Scrape

pytestmark = pytest.mark.django_db


def launched(workspace, count: int, callbacks_fixture) -> list[Run]:
    """`count` runs launched, their on-commit callbacks (the admissions) run, their messages not sent: no worker here."""
    runs = []
    for index in range(count):
        with callbacks_fixture(execute=False) as callbacks:
            runs.append(launch_run(workspace, task=f"Task {index}").run)
        assert len(callbacks) == 1, "the launch admits once, on commit"
    return runs


@pytest.fixture
def sent(monkeypatch) -> list[int]:
    """The runs lifecycle.enqueue would send a message for: recorded, not sent (no worker takes them here)."""
    recorded: list[int] = []
    monkeypatch.setattr(lifecycle, "enqueue", recorded.append)
    return recorded


@pytest.fixture
def admit_now(sent, django_capture_on_commit_callbacks):
    """lifecycle.admit in a test's transaction, its on-commit enqueues run: the runs it sent messages for."""

    def admit(workspace) -> list[int]:
        sent.clear()
        with django_capture_on_commit_callbacks(execute=True):
            lifecycle.admit(workspace.pk)
        return list(sent)

    return admit


def test_runs_beyond_the_concurrency_limit_wait_and_say_so_once(
    acme, admit_now, sent, django_capture_on_commit_callbacks
):
    acme.max_concurrent_runs = 2
    acme.save()
    runs = launched(acme, 4, django_capture_on_commit_callbacks)

    assert admit_now(acme) == [runs[0].pk, runs[1].pk]
    assert admit_now(acme) == []  # the limit holds however often admissions run
    for run in runs:
        run.refresh_from_db()
    assert [run.admitted_at is not None for run in runs] == [True, True, False, False]
    for run in runs[2:]:
        waiting = Event.objects.filter(run=run, type="run.waiting")
        assert [event.payload for event in waiting] == [{"reason": "workspace_limit", "max_concurrent_runs": 2}]
    assert queueing.depth(acme) == queueing.QueueDepth(
        running=0, queued=2, waiting=2, max_concurrent_runs=2, max_queued_runs=1000
    )


def test_a_run_ending_admits_the_next_in_launch_order(acme, admit_now, sent, django_capture_on_commit_callbacks):
    acme.max_concurrent_runs = 1
    acme.save()
    first, second, third = launched(acme, 3, django_capture_on_commit_callbacks)
    admit_now(acme)
    Run.objects.filter(pk=first.pk).update(status=Run.Status.RUNNING, started_at=timezone.now())

    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.finish(first, Run.Status.SUCCEEDED, success=True)
    assert sent == [second.pk]
    third.refresh_from_db()
    assert third.admitted_at is None


def test_a_cancelled_waiting_run_frees_nothing_and_is_never_admitted(
    acme, admit_now, sent, django_capture_on_commit_callbacks
):
    acme.max_concurrent_runs = 1
    acme.save()
    _first, second = launched(acme, 2, django_capture_on_commit_callbacks)
    admit_now(acme)
    lifecycle.request_cancel(second)
    assert admit_now(acme) == []
    second.refresh_from_db()
    assert second.status == Run.Status.CANCELLED and second.admitted_at is None


def test_the_reaper_admits_what_an_ending_did_not(acme, admit_now, sent, django_capture_on_commit_callbacks):
    acme.max_concurrent_runs = 1
    acme.save()
    first, second = launched(acme, 2, django_capture_on_commit_callbacks)
    admit_now(acme)
    # The first run ended in a process that died before its admission ran.
    Run.objects.filter(pk=first.pk).update(status=Run.Status.FAILED, finished_at=timezone.now())
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        lifecycle.admit_waiting_runs()
    assert sent == [second.pk]


def test_waiting_runs_are_not_redelivered_they_have_no_message(
    acme, admit_now, sent, django_capture_on_commit_callbacks
):
    acme.max_concurrent_runs = 1
    acme.save()
    first, second = launched(acme, 2, django_capture_on_commit_callbacks)
    admit_now(acme)
    long_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk__in=[first.pk, second.pk]).update(created_at=long_ago)
    Run.objects.filter(pk=first.pk).update(admitted_at=long_ago)
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert lifecycle.redeliver_queued_runs() == [first.public_id]
    assert sent == [first.pk]


def test_a_launch_beyond_the_queued_limit_is_429_and_creates_nothing(acme, api, django_capture_on_commit_callbacks):
    acme.max_queued_runs = 2
    acme.save()
    launched(acme, 2, django_capture_on_commit_callbacks)

    response = api.post("/runs", {"task": "One too many."})
    assert response.status_code == 429
    assert response["Retry-After"] == str(queueing.QUEUE_FULL_RETRY_AFTER_SECONDS)
    error = response.json()["error"]
    assert error["type"] == "rate_limited"
    assert "max_queued_runs 2" in error["message"]
    assert Run.objects.filter(workspace=acme).count() == 2


def test_the_queue_endpoint_counts_only_its_own_workspace(
    acme, umbrella, api, umbrella_api, admit_now, django_capture_on_commit_callbacks, settings
):
    settings.WORKSPACE_MAX_CONCURRENT_RUNS = 1
    runs = launched(acme, 3, django_capture_on_commit_callbacks)
    admit_now(acme)
    Run.objects.filter(pk=runs[0].pk).update(status=Run.Status.RUNNING, started_at=timezone.now())
    Run.objects.filter(pk=runs[1].pk).update(admitted_at=None)

    assert api.get("/queue").json() == {
        "running": 1,
        "queued": 0,
        "waiting": 2,
        "max_concurrent_runs": 1,
        "max_queued_runs": 1000,
    }
    assert umbrella_api.get("/queue").json()["waiting"] == 0


def test_metrics_say_each_workspaces_queue(
    acme, umbrella, admit_now, django_capture_on_commit_callbacks, client, settings
):
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_CACHE_SECONDS = 0
    acme.max_concurrent_runs = 1
    acme.save()
    launched(acme, 3, django_capture_on_commit_callbacks)
    admit_now(acme)
    launched(umbrella, 1, django_capture_on_commit_callbacks)
    admit_now(umbrella)

    response = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    metrics = Scrape(response.content.decode())
    assert metrics.value("pilothouse_workspace_runs", workspace=acme.slug, state="queued") == 1
    assert metrics.value("pilothouse_workspace_runs", workspace=acme.slug, state="waiting") == 2
    assert metrics.value("pilothouse_workspace_runs", workspace=umbrella.slug, state="queued") == 1
