"""The admin's usage review: model request totals per filter, the billing view and its CSV, staff-only access."""

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from agent_platform.lib.money import exact_usd
from agent_platform.models import ModelRequest
from agent_platform.reports import usage_totals
from tests.support import admin
from tests.support.admin import BILLING, CHANGELIST
from tests.support.clients import client_for
from tests.support.usage_rows import make_rows, python_sums

pytestmark = pytest.mark.django_db

staff = admin.staff  # fixtures
staff_client = admin.staff_client


def queries_for(client, url: str) -> tuple[int, object]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured), response


def test_alice_who_is_not_staff_is_refused_the_admin_and_billing(alice_client):
    for url in [reverse("admin:index"), reverse(CHANGELIST), reverse(BILLING), f"{reverse(BILLING)}?format=csv"]:
        response = alice_client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))


def test_anonymous_is_sent_to_the_admin_login(client):
    response = client.get(reverse(BILLING))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_without_the_usage_permission_is_refused_billing(db):
    user = get_user_model().objects.create_user(username="sam", password="sam-password-123", is_staff=True)
    assert client_for(user).get(reverse(BILLING)).status_code == 403


def test_staff_reach_the_changelist_and_billing_from_the_index(staff_client):
    index = staff_client.get(reverse("admin:index"))
    assert index.status_code == 200
    assert reverse(BILLING).encode() in index.content
    assert staff_client.get(reverse(CHANGELIST)).status_code == 200
    assert staff_client.get(reverse(BILLING)).status_code == 200


def test_changelist_totals_follow_the_filter(staff_client, acme, umbrella):
    rows = make_rows([acme, umbrella], 500)
    response = staff_client.get(reverse(CHANGELIST))
    assert response.context["usage_totals"] == python_sums(rows)
    filtered = staff_client.get(reverse(CHANGELIST), {"workspace__id__exact": acme.pk, "source__exact": "judge"})
    expected = python_sums([row for row in rows if row.workspace_id == acme.pk and row.source == "judge"])
    assert filtered.context["usage_totals"] == expected
    assert f"${expected['cost_usd']}".encode() in filtered.content


def test_changelist_with_10000_rows_renders_in_a_fixed_number_of_queries(staff_client, acme, umbrella):
    make_rows([acme, umbrella], 20)
    few, _ = queries_for(staff_client, reverse(CHANGELIST))
    make_rows([acme, umbrella], 10_000 - 20, seed=8)
    many, response = queries_for(staff_client, reverse(CHANGELIST))
    assert many == few <= 15
    assert response.context["usage_totals"]["requests"] == 10_000
    assert response.context["usage_totals"] == usage_totals(ModelRequest.objects.all())


def test_unpriced_requests_are_flagged_in_the_changelist(staff_client, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="claude-mystery", input_tokens=5, unpriced=True)
    response = staff_client.get(reverse(CHANGELIST))
    assert b"UNPRICED" in response.content
    assert b"1 billed at zero" in response.content
    only = staff_client.get(reverse(CHANGELIST), {"unpriced__exact": "1"})
    assert only.context["usage_totals"]["unpriced"] == only.context["usage_totals"]["requests"] == 1


def test_model_requests_are_history_and_cannot_be_edited(staff_client, acme, db):
    admin_user = get_user_model().objects.create_superuser(username="root", password="root-password-123")
    request = ModelRequest.objects.create(workspace=acme, source="agent", model="claude-haiku-4-5")
    url = reverse("admin:agent_platform_modelrequest_change", args=[request.pk])
    response = client_for(admin_user).post(url, {"model": "cheaper", "source": "agent"})
    request.refresh_from_db()
    assert response.status_code == 403 and request.model == "claude-haiku-4-5"


def billing_url(**params) -> str:
    query = "&".join(f"{key}={value}" for key, value in params.items())
    return f"{reverse(BILLING)}?{query}"


def test_billing_view_with_10000_rows_renders_in_a_fixed_number_of_queries(staff_client, acme, umbrella):
    make_rows([acme, umbrella], 20)
    few, _ = queries_for(staff_client, billing_url(month="", split="model"))
    make_rows([acme, umbrella], 10_000 - 20, seed=9)
    many, response = queries_for(staff_client, billing_url(month="", split="model"))
    assert many == few <= 12
    report = response.context["report"]
    assert report["totals"]["requests"] == 10_000
    assert sum(row["cost_usd"] for row in report["by_month"]) == report["totals"]["cost_usd"]
    # every month on one page: months only, the days a month at a time (and in the CSV)
    assert report["by_day"] == [] and b"billing-days-note" in response.content
    october = staff_client.get(billing_url(month="2026-10", split="model")).context["report"]
    assert sum(row["cost_usd"] for row in october["by_day"]) == october["totals"]["cost_usd"] > 0


def test_billing_filters_by_workspace_and_month_and_splits_by_source(staff_client, acme, umbrella):
    rows = make_rows([acme, umbrella], 1000)
    response = staff_client.get(billing_url(workspace=acme.pk, month="2026-10", split="source"))
    october = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)
    chosen = [row for row in rows if row.workspace_id == acme.pk and october[0] <= row.created_at < october[1]]
    report = response.context["report"]
    assert report["totals"] == python_sums(chosen)
    assert {row["workspace_slug"] for row in report["by_month"]} == {"acme"}
    judge_rows = [row for row in chosen if row.source == "judge"]
    judge_month = next(row for row in report["by_month"] if row["source"] == "judge")
    assert judge_month["cost_usd"] == python_sums(judge_rows)["cost_usd"]
    assert len({row["day"] for row in report["by_day"]}) == 31


def test_billing_defaults_to_the_current_month(staff_client, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="m", cost_usd=Decimal("1.5"))
    ModelRequest.objects.create(
        workspace=acme, source="agent", model="m", cost_usd=Decimal(7), created_at=datetime(2020, 1, 5, tzinfo=UTC)
    )
    response = staff_client.get(reverse(BILLING))
    assert response.context["report"]["totals"]["cost_usd"] == Decimal("1.5")


def test_csv_export_has_the_views_numbers(staff_client, acme, umbrella):
    make_rows([acme, umbrella], 1500)
    for split in ["", "model", "source"]:
        params = {"month": "2026-10", "split": split}
        view = staff_client.get(billing_url(**params)).context["report"]
        exported = staff_client.get(billing_url(**params, format="csv"))
        assert exported["Content-Type"].startswith("text/csv")
        lines = list(csv.DictReader(io.StringIO(exported.content.decode())))
        expected = []
        for period, key, fmt in (("month", "by_month", "%Y-%m"), ("day", "by_day", "%Y-%m-%d")):
            for row in view[key]:
                line = {"period": period, "date": row[period].strftime(fmt), "workspace": row["workspace_slug"]}
                if split:
                    line[split] = row[split]
                for metric in ["requests", "input", "output", "cache_read", "cache_write", "total", "unpriced"]:
                    line[metric] = str(row[metric])
                line["cost_usd"] = exact_usd(row["cost_usd"])
                line["scripted"] = "false"
                line["meter"] = line["quantity"] = ""
                expected.append(line)
        assert lines == expected
        assert sum(Decimal(line["cost_usd"]) for line in lines if line["period"] == "day") == view["totals"]["cost_usd"]
    # every month: the page shows months, the CSV every day as well
    every = staff_client.get(billing_url(month="")).context["report"]
    lines = list(csv.DictReader(io.StringIO(staff_client.get(billing_url(month="", format="csv")).content.decode())))
    assert sum(Decimal(line["cost_usd"]) for line in lines if line["period"] == "day") == every["totals"]["cost_usd"]


def test_csv_writes_a_zero_cost_as_0(staff_client, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="claude-haiku-5-5", cost_usd=Decimal("0"))
    lines = list(csv.DictReader(io.StringIO(staff_client.get(billing_url(format="csv")).content.decode())))
    assert lines and {line["cost_usd"] for line in lines} == {"0"}


def test_csv_cells_never_start_a_formula(staff_client, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="=HYPERLINK(1)")
    exported = staff_client.get(billing_url(split="model", format="csv")).content.decode()
    assert "'=HYPERLINK(1)" in exported and ",=HYPERLINK" not in exported


def test_price_a_request_was_billed_at_is_read_only(acme, db):
    admin_user = get_user_model().objects.create_superuser(username="root", password="root-password-123")
    client = client_for(admin_user)
    from agent_platform.billing import price_in_force

    price = price_in_force("claude-haiku-4-5", "standard", datetime(2026, 1, 1, tzinfo=UTC))
    url = reverse("admin:agent_platform_price_change", args=[price.pk])
    assert b'name="input_per_mtok"' in client.get(url).content
    ModelRequest.objects.create(workspace=acme, source="agent", model="claude-haiku-4-5", price=price)
    assert b'name="input_per_mtok"' not in client.get(url).content
