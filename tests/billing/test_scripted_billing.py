"""The scripted demo model's requests (a process with SCRIPTED_MODEL, as a key-less `make run` starts its worker): billed
$0, labelled scripted wherever usage is shown, never mixed into real spend and never counted toward a cost cap. The
tests' own stub stands for the real API (SCRIPTED_MODEL off), so its requests keep their real prices."""

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from agent_platform.models import ModelRequest, Price
from runs import spending
from runs.models import Event
from runs.usage import record_model_request
from tests.support import admin
from tests.support.admin import BILLING, CHANGELIST
from tests.support.factories import make_run

staff = admin.staff  # fixtures
staff_client = admin.staff_client

pytestmark = pytest.mark.django_db

MODEL = "claude-sonnet-5-5"
USAGE = {"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


@pytest.fixture
def price():
    """A price in force now: $2 / $10 per million tokens, so USAGE costs $0.004 at the real API."""
    return Price.objects.create(
        model=MODEL,
        input_per_mtok=Decimal(2),
        output_per_mtok=Decimal(10),
        cache_write_5m_per_mtok=Decimal("2.5"),
        cache_write_1h_per_mtok=Decimal(4),
        cache_read_per_mtok=Decimal("0.2"),
        valid_from=timezone.now() - timedelta(seconds=1),
    )


def spend(run, *, scripted: bool, settings, source: str = "agent") -> ModelRequest:
    settings.SCRIPTED_MODEL = scripted
    return record_model_request(run, source=source, model=MODEL, usage=USAGE)


def test_a_scripted_request_bills_zero_and_says_it_is_scripted(acme, price, settings):
    run = make_run(acme)

    request = spend(run, scripted=True, settings=settings)

    assert (request.scripted, request.cost_usd, request.price, request.unpriced) == (True, Decimal(0), None, False)
    assert request.input_tokens == 1000  # the tokens are kept: only the bill is zero
    run.refresh_from_db()
    assert (run.cost_usd, run.usage_requests, run.usage_input) == (Decimal(0), 1, 1000)
    usage = Event.objects.get(run=run, type="agent.usage").payload
    assert (usage["scripted"], usage["cost_usd"], usage["unpriced"]) == (True, "0", False)


def test_a_request_to_the_real_api_keeps_its_price(acme, price, settings):
    run = make_run(acme)

    request = spend(run, scripted=False, settings=settings)

    assert (request.scripted, request.cost_usd, request.price) == (False, Decimal("0.004"), price)
    assert Event.objects.get(run=run, type="agent.usage").payload["scripted"] is False


def test_no_cost_cap_applies_to_the_scripted_model(acme, price, settings):
    acme.monthly_cost_cap_usd = Decimal("0.001")
    acme.save()
    run = make_run(acme, max_cost_usd=Decimal("0.001"))
    settings.SCRIPTED_MODEL = True
    spend(run, scripted=True, settings=settings)
    # A judge's request, however large, is sent: it bills nothing.
    spending.ensure_within_cap(run, {"model": MODEL, "messages": [{"role": "user", "content": "x" * 400_000}]}, "x")

    assert spending.headroom(run).left is None
    settings.SCRIPTED_MODEL = False
    room = spending.headroom(run)
    assert (room.left, room.spent) == (Decimal("0.001"), Decimal(0))


def test_scripted_requests_never_count_toward_the_workspaces_month(acme, price, settings):
    acme.monthly_cost_cap_usd = Decimal(1)
    acme.save()
    earlier = make_run(acme)
    spend(earlier, scripted=False, settings=settings)
    spend(earlier, scripted=True, settings=settings)
    settings.SCRIPTED_MODEL = False  # a run on the real API, in the same month

    room = spending.headroom(make_run(acme))

    assert (room.cap, room.spent) == ("monthly", Decimal("0.004"))


def test_the_usage_page_shows_scripted_requests_apart_from_real_spend(alice_client, acme, price, settings):
    run = make_run(acme)
    spend(run, scripted=False, settings=settings)
    spend(run, scripted=True, settings=settings)
    spend(run, scripted=True, settings=settings, source="judge")

    response = alice_client.get("/usage/")

    totals, scripted = response.context["totals"], response.context["scripted_totals"]
    assert (totals["requests"], totals["input"], totals["cost_usd"]) == (1, 1000, Decimal("0.004"))
    assert (scripted["requests"], scripted["input"], scripted["cost_usd"]) == (2, 2000, Decimal(0))
    assert [row["requests"] for row in response.context["by_model"]] == [1]
    assert {row["source"]: row["requests"] for row in response.context["scripted_by_source"]} == {
        "agent": 1,
        "judge": 1,
    }
    html = response.content.decode()
    section = html[html.index('id="usage-scripted"') :]
    assert "2 requests answered by the scripted demo model: billed $0, not in the totals above" in section
    assert section.count('<span class="badge scripted">scripted</span>') == 2


def test_the_usage_page_of_real_spend_only_has_no_scripted_section(alice_client, acme, price, settings):
    spend(make_run(acme), scripted=False, settings=settings)

    assert 'id="usage-scripted"' not in alice_client.get("/usage/").content.decode()


def test_the_usage_api_reports_scripted_requests_on_a_line_of_their_own(api, acme, price, settings):
    run = make_run(acme)
    spend(run, scripted=False, settings=settings)
    spend(run, scripted=True, settings=settings)

    body = api.get("/usage?group_by=source").json()

    assert (body["totals"]["requests"], body["totals"]["input"], body["totals"]["cost_usd"]) == (1, 1000, "0.004")
    assert [(group["key"], group["requests"]) for group in body["groups"]] == [("agent", 1)]
    assert body["scripted"]["totals"] == {
        "requests": 1,
        "input": 1000,
        "output": 200,
        "cache_read": 0,
        "cache_write": 0,
        "total": 1200,
        "cost_usd": "0",
    }
    assert [(group["key"], group["cost_usd"]) for group in body["scripted"]["groups"]] == [("agent", "0")]


def test_the_usage_api_without_scripted_requests_has_an_empty_scripted_line(api, acme):
    body = api.get("/usage").json()

    assert body["scripted"] == {
        "totals": {
            "requests": 0,
            "input": 0,
            "output": 0,
            "cache_read": 0,
            "cache_write": 0,
            "total": 0,
            "cost_usd": "0",
        },
        "groups": [],
    }


def test_admin_billing_and_its_csv_keep_scripted_requests_apart(staff_client, acme, price, settings):
    run = make_run(acme)
    spend(run, scripted=False, settings=settings)
    spend(run, scripted=True, settings=settings)

    response = staff_client.get(reverse(BILLING))
    exported = staff_client.get(f"{reverse(BILLING)}?format=csv").content.decode()

    report = response.context["report"]
    assert (report["totals"]["requests"], report["totals"]["cost_usd"]) == (1, Decimal("0.004"))
    assert [row["requests"] for row in report["by_month"]] == [1]
    assert (report["scripted_totals"]["requests"], report["scripted_totals"]["input"]) == (1, 1000)
    html = response.content.decode()
    assert 'id="billing-scripted-totals"' in html and 'class="billing-month-scripted"' in html
    lines = list(csv.DictReader(io.StringIO(exported)))
    assert [(line["period"], line["requests"], line["cost_usd"], line["scripted"]) for line in lines] == [
        ("month", "1", "0.004", "false"),
        ("day", "1", "0.004", "false"),
        ("month", "1", "0", "true"),  # plain digits, never 0E-8
        ("day", "1", "0", "true"),
    ]


def test_the_admin_changelist_totals_real_spend_and_labels_scripted_rows(staff_client, acme, price, settings):
    run = make_run(acme)
    spend(run, scripted=False, settings=settings)
    spend(run, scripted=True, settings=settings)

    response = staff_client.get(reverse(CHANGELIST))

    assert response.context["usage_totals"]["requests"] == 1
    assert response.context["scripted_totals"]["requests"] == 1
    html = response.content.decode()
    assert 'id="usage-totals-scripted"' in html
    assert "Answered by the scripted demo model: billed at zero, not real spend." in html
