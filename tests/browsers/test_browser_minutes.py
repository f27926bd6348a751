"""Browser minutes are billed: a session's every started minute at the price in force when it was created, on the
workspace's usage page and usage API, in the admin's billing and its CSV, and in v4's browserCost. Sessions go through
the service as the API and the worker drive them; only their clock is moved back, as if they had run that long."""

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from agent_platform.models import ModelRequest
from browsers import services
from browsers.models import BrowserSession
from tests.support import admin
from tests.support.admin import BILLING

staff = admin.staff  # fixtures
staff_client = admin.staff_client

pytestmark = pytest.mark.django_db

PRICE = Decimal("0.02")


def session_that_ran(workspace, seconds: float) -> BrowserSession:
    """A session created, taken by a worker, running and stopped through the service, that lived `seconds`."""
    session = services.create_session(workspace)
    services.claim(session.pk, worker="worker-1@host")
    services.mark_running(session, "127.0.0.1:1", "/tmp/downloads")
    BrowserSession.objects.filter(pk=session.pk).update(started_at=timezone.now() - timedelta(seconds=seconds))
    services.end(session, BrowserSession.StopReason.REQUESTED)
    session.refresh_from_db()
    return session


@pytest.fixture
def priced(settings):
    settings.BROWSER_MINUTE_PRICE_USD = PRICE
    return settings


@pytest.fixture
def sessions(priced, acme, umbrella):
    """Acme: 90 s (2 minutes) and 30 s (1 minute); Umbrella: 290 s (5 minutes); and one that never started (billed nothing)."""
    ran = [session_that_ran(acme, 90), session_that_ran(acme, 30), session_that_ran(umbrella, 290)]
    services.request_stop(services.create_session(acme))
    return ran


def test_a_sessions_minutes_are_every_started_minute_at_the_price_it_was_created_with(sessions, priced):
    first, second, _ = sessions
    assert (first.browser_minutes(), first.cost_usd()) == (2, Decimal("0.04"))
    assert (second.browser_minutes(), second.cost_usd()) == (1, Decimal("0.02"))
    priced.BROWSER_MINUTE_PRICE_USD = Decimal("1")  # a new price applies to new sessions only
    first.refresh_from_db()
    assert first.cost_usd() == Decimal("0.04")
    assert services.usage(first.workspace)["cost_usd"] == Decimal("0.06")


def test_the_usage_api_bills_browser_minutes_beside_the_model_requests(sessions, api, umbrella_api, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="claude-haiku-4-5", cost_usd=Decimal("0.5"))
    body = api.get("/usage").json()
    [minutes] = body["metered"]
    assert minutes["name"] == "browser_minutes" and minutes["unit"] == "minute"
    assert (minutes["count"], minutes["quantity"], minutes["cost_usd"]) == (2, 3, "0.06")
    assert [(day["count"], day["quantity"], day["cost_usd"]) for day in minutes["days"]] == [(2, 3, "0.06")]
    assert minutes["days"][0]["day"] == str(timezone.localdate())
    assert body["totals"]["cost_usd"] == "0.5" and body["total_cost_usd"] == "0.56"
    # Umbrella's key sees Umbrella's five minutes only
    [theirs] = umbrella_api.get("/usage").json()["metered"]
    assert (theirs["quantity"], theirs["cost_usd"]) == (5, "0.1")
    # before the sessions began: nothing
    later = (timezone.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert api.get(f"/usage?from={later}").json()["metered"][0]["quantity"] == 0
    assert api.get("/browsers/usage").json()["browser_minutes"] == 3


def test_the_usage_page_shows_browser_minutes_and_the_total_cost(sessions, alice_client, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="claude-haiku-4-5", cost_usd=Decimal("0.5"))
    html = alice_client.get(reverse("platform:usage")).content.decode()
    meter = html[html.index('id="usage-meter-browser_minutes"') :][:400]
    assert ">3<" in meter and "2 sessions · $0.06" in meter
    total = html[html.index('id="usage-total-cost"') :][:200]
    assert "$0.56" in total
    metered = html[html.index('id="usage-metered"') :]
    assert "Browser minutes" in metered and "3 minutes" in metered and "$0.06" in metered


def test_the_browsers_page_shows_this_months_minutes_in_dollars(sessions, alice_client):
    html = alice_client.get(reverse("browsers:list")).content.decode()
    usage = html[html.index('id="browser-usage"') :][:300]
    assert "2 sessions" in usage and "3 browser minutes" in usage and "$0.06" in usage


def test_admin_billing_and_its_csv_bill_browser_minutes_per_workspace_and_day(sessions, staff_client, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="claude-haiku-4-5", cost_usd=Decimal("0.5"))
    response = staff_client.get(reverse(BILLING))
    report = response.context["report"]
    [minutes] = report["metered_totals"]
    assert (minutes["count"], minutes["quantity"], minutes["cost_usd"]) == (3, 8, Decimal("0.16"))
    assert report["total_cost_usd"] == Decimal("0.66")
    assert {(row["workspace_slug"], row["quantity"]) for row in report["metered_by_month"]} == {
        (acme.slug, 3),
        ("umbrella", 5),
    }
    html = response.content.decode()
    assert 'id="billing-metered-totals"' in html and 'class="billing-metered-day"' in html and "$0.66" in html

    # one workspace
    chosen = staff_client.get(f"{reverse(BILLING)}?workspace={acme.pk}").context["report"]
    assert chosen["metered_totals"][0]["quantity"] == 3 and chosen["total_cost_usd"] == Decimal("0.56")

    exported = staff_client.get(f"{reverse(BILLING)}?format=csv").content.decode()
    lines = list(csv.DictReader(io.StringIO(exported)))
    metered = [line for line in lines if line["meter"]]
    today = f"{timezone.localdate():%Y-%m-%d}"
    assert sorted((line["period"], line["workspace"], line["quantity"], line["cost_usd"]) for line in metered) == [
        ("day", acme.slug, "3", "0.06"),
        ("day", "umbrella", "5", "0.1"),
        ("month", acme.slug, "3", "0.06"),
        ("month", "umbrella", "5", "0.1"),
    ]
    assert {line["date"] for line in metered if line["period"] == "day"} == {today}
    assert all(line["meter"] == "browser_minutes" and line["requests"] == "" for line in metered)
    # a day's rows add up to everything billed
    assert sum(Decimal(line["cost_usd"]) for line in lines if line["period"] == "day") == Decimal("0.66")


def test_v4_browser_cost_is_the_sessions_exact_cost(sessions, acme_key):
    from django.test import Client

    first = sessions[0]
    response = Client().get(f"/api/v4/browsers/{first.uuid}", headers={"X-Browser-Use-API-Key": acme_key})
    assert response.status_code == 200, response.content
    assert response.json()["browserCost"] == "0.04"


def test_a_free_installation_bills_browser_minutes_at_zero(acme, api):
    session_that_ran(acme, 61)  # BROWSER_MINUTE_PRICE_USD is 0 unless an installation prices it
    [minutes] = api.get("/usage").json()["metered"]
    assert (minutes["quantity"], minutes["cost_usd"]) == (2, "0")
