"""The daily rollup the admin's billing view reads (UsageDay): always what the requests themselves sum to."""

import threading
from datetime import UTC, date, datetime
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection
from django.urls import reverse
from django.utils import timezone

from agent_platform.admin_billing import billing_report
from agent_platform.models import ModelRequest, UsageDay
from agent_platform.reports import rebuild_usage_days, usage_by, usage_totals
from runs.models import Run
from runs.usage import Answered, record_turn
from tests.support import admin
from tests.support.admin import BILLING
from tests.support.clients import client_for
from tests.support.factories import make_run
from tests.support.usage_rows import make_rows, python_sums

staff = admin.staff  # fixtures
staff_client = admin.staff_client

GROUPINGS = [
    ["workspace", "month"],
    ["workspace", "day"],
    ["workspace", "month", "model"],
    ["workspace", "day", "source"],
    ["day", "speed"],
]


def assert_rollup_matches_the_requests() -> None:
    assert usage_totals(UsageDay.objects.all()) == usage_totals(ModelRequest.objects.all())
    for grouping in GROUPINGS:
        assert usage_by(UsageDay.objects.all(), grouping) == usage_by(ModelRequest.objects.all(), grouping), grouping


@pytest.mark.django_db
def test_the_rollup_sums_what_the_requests_sum_however_they_are_grouped(acme, umbrella):
    rows = make_rows([acme, umbrella], 3000)
    assert usage_totals(UsageDay.objects.all()) == python_sums(rows)
    # far fewer rows than requests: what makes the billing view's cost independent of their number
    assert UsageDay.objects.count() < len(rows) // 2
    assert_rollup_matches_the_requests()
    one = ModelRequest.objects.create(workspace=acme, source="judge", model="m", input_tokens=3, cost_usd="0.25")
    assert_rollup_matches_the_requests()
    assert UsageDay.objects.get(model="m").request_count == 1
    assert one.pk is not None


@pytest.mark.django_db
def test_the_billing_report_from_the_rollup_is_the_report_of_the_requests(acme, umbrella):
    make_rows([acme, umbrella], 2000)
    for split in ("", "model", "source"):
        report = billing_report(UsageDay.objects.all(), split)
        extra = [split] if split else []
        real = ModelRequest.objects.filter(scripted=False)
        assert report["totals"] == usage_totals(real)
        assert report["by_month"] == usage_by(real, ["workspace", "month", *extra], newest_first=True)
        assert report["by_day"] == usage_by(real, ["workspace", "day", *extra], newest_first=True)


@pytest.mark.django_db
def test_days_are_time_zone_days(acme, settings):
    settings.TIME_ZONE = "America/New_York"
    # 02:00 UTC on 1 October is still 30 September in New York
    ModelRequest.objects.create(
        workspace=acme, source="agent", model="m", cost_usd="1", created_at=datetime(2026, 10, 1, 2, tzinfo=UTC)
    )
    assert UsageDay.objects.get().day == date(2026, 9, 30)
    assert_rollup_matches_the_requests()


@pytest.mark.django_db
def test_rebuild_writes_the_same_rollup_from_the_requests(acme, umbrella, settings):
    make_rows([acme, umbrella], 1500)
    before = sorted(UsageDay.objects.values_list(*UsageDay.KEYS, *UsageDay.SUMS))
    UsageDay.objects.update(request_count=0)  # as if it had drifted
    assert rebuild_usage_days() == len(before)
    assert sorted(UsageDay.objects.values_list(*UsageDay.KEYS, *UsageDay.SUMS)) == before
    # after a change of TIME_ZONE the days move with it
    settings.TIME_ZONE = "Asia/Tokyo"
    rebuild_usage_days()
    assert_rollup_matches_the_requests()


@pytest.mark.django_db
def test_a_turns_record_adds_its_requests_to_the_rollup(acme):
    run = make_run(acme)
    usage = SimpleNamespace(
        input_tokens=1200, output_tokens=300, cache_read_input_tokens=0, cache_creation_input_tokens=0
    )
    now = timezone.now()
    record_turn(run, answered=Answered("agent", "claude-sonnet-4-6", usage, now), events=[])
    record_turn(run, answered=Answered("agent", "claude-sonnet-4-6", usage, now), events=[])
    day = UsageDay.objects.get(workspace=acme)
    assert (day.request_count, day.input_tokens, day.output_tokens) == (2, 2400, 600)
    assert_rollup_matches_the_requests()


@pytest.mark.django_db
def test_deleting_a_run_keeps_what_its_requests_cost(staff_client, acme):
    run = make_run(acme, status=Run.Status.SUCCEEDED)
    ModelRequest.objects.create(workspace=acme, run=run, source="agent", model="m", cost_usd=Decimal("2.5"))
    run.delete()
    assert ModelRequest.objects.get().run is None
    report = staff_client.get(f"{reverse(BILLING)}?month=").context["report"]
    assert report["totals"]["cost_usd"] == Decimal("2.5")
    assert_rollup_matches_the_requests()


@pytest.mark.django_db
def test_no_one_deletes_a_model_request_in_the_admin(acme):
    superuser = get_user_model().objects.create_superuser(username="root", password="root-password-123")
    request = ModelRequest.objects.create(workspace=acme, source="agent", model="m", cost_usd="1")
    url = reverse("admin:agent_platform_modelrequest_delete", args=[request.pk])
    assert client_for(superuser).post(url, {"post": "yes"}).status_code == 403
    assert ModelRequest.objects.filter(pk=request.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_turns_of_a_workspace_each_add_theirs(acme):
    # PostgreSQL: concurrent upserts of one row; SQLite: writers queued on its lock (the busy timeout), none lost.
    threads, each = 6, 40
    start = threading.Barrier(threads)
    failures: list[BaseException] = []

    def write() -> None:
        try:
            start.wait()
            for _ in range(each):
                ModelRequest.objects.create(workspace=acme, source="agent", model="m", input_tokens=1, cost_usd="0.1")
        except BaseException as error:  # reported to the test's thread
            failures.append(error)
        finally:
            close_old_connections()
            connection.close()

    workers = [threading.Thread(target=write) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not failures
    day = UsageDay.objects.get()
    assert (day.request_count, day.input_tokens) == (threads * each, threads * each)
    assert usage_totals(UsageDay.objects.all())["cost_usd"] == Decimal("0.1") * threads * each
