"""Cost caps: each run's max_cost_usd (launch form, API, the workspace's default) and the workspace's monthly cap."""

from decimal import Decimal

import pytest

from agent_platform.errors import ServiceError
from runs.launch import launch_run
from runs.models import Run

pytestmark = pytest.mark.django_db


def test_a_run_gets_five_dollars_out_of_the_box(acme):
    run = launch_run(acme, task="t").run
    assert run.max_cost_usd == Decimal(5)


def test_a_run_gets_its_workspaces_default_cap(acme):
    acme.default_max_cost_usd = Decimal("0.75")
    acme.save()
    assert launch_run(acme, task="t").run.max_cost_usd == Decimal("0.75")


@pytest.mark.parametrize("given, stored", [(0.05, "0.05"), (2, "2"), ("0.1234", "0.1234"), (10_000, "10000")])
def test_a_launch_names_its_own_cap(acme, given, stored):
    assert launch_run(acme, task="t", max_cost_usd=given).run.max_cost_usd == Decimal(stored)


@pytest.mark.parametrize("given", [0, -1, "abc", True, 10_001, "0.00001", "NaN", [1], "Infinity"])
def test_a_cap_that_is_not_a_positive_amount_is_refused_naming_the_field(acme, given):
    with pytest.raises(ServiceError) as caught:
        launch_run(acme, task="t", max_cost_usd=given)
    assert caught.value.code == "invalid_request"
    assert caught.value.field == "max_cost_usd"
    assert Run.objects.count() == 0


def test_the_api_takes_and_returns_the_cap(api):
    response = api.post("/runs", {"task": "Find the mug.", "max_cost_usd": 0.05})
    assert response.status_code == 201, response.content
    assert response.json()["max_cost_usd"] == "0.05"
    assert Run.objects.get().max_cost_usd == Decimal("0.05")
    default = api.post("/runs", {"task": "Find the mug."})
    assert default.json()["max_cost_usd"] == "5"


def test_the_api_refuses_a_negative_cap_with_the_envelope(api):
    response = api.post("/runs", {"task": "Find the mug.", "max_cost_usd": -3})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request"
    assert response.json()["error"]["message"].startswith("max_cost_usd:")


def test_the_launch_form_takes_a_cap_and_shows_the_workspace_default(alice_client, acme):
    page = alice_client.get("/runs/new/")
    assert 'name="max_cost_usd"' in page.content.decode()
    response = alice_client.post("/runs/new/", {"task": "Find the mug.", "max_cost_usd": "1.5"})
    assert response.status_code == 302
    assert Run.objects.get().max_cost_usd == Decimal("1.5")


def test_the_launch_form_names_a_bad_cap(alice_client):
    response = alice_client.post("/runs/new/", {"task": "Find the mug.", "max_cost_usd": "-1"})
    assert response.status_code in (200, 400)
    assert "max_cost_usd: must be more than 0" in response.content.decode()
    assert Run.objects.count() == 0


def test_the_run_page_shows_spend_against_the_cap_and_what_context_management_dropped(alice_client, acme):
    from runs.events import emit
    from tests.support.factories import make_run

    run = make_run(acme, max_cost_usd=Decimal("0.05"), cost_usd=Decimal("0.04"))
    emit(
        run,
        "context.cleared",
        {"turn": 14, "reason": "tokens", "screenshots": 7, "page_texts": 7, "exchanges": 0, "tokens_saved": 70545},
    )
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "$0.0400" in page and "/ $0.05" in page
    assert 'id="cost-cap"' in page and "width: 80%" in page
    assert "Context cleared at turn 14 · 7 screenshots, 7 page texts left what is sent · 70545 tokens saved" in page
    assert '"max_cost_usd": "0.0500"' in page


def test_headroom_is_the_nearer_of_the_run_cap_and_the_workspace_monthly_cap(acme):
    from agent_platform.models import ModelRequest
    from runs.spending import headroom
    from tests.support.factories import make_run

    run = make_run(acme, max_cost_usd=Decimal("0.05"), cost_usd=Decimal("0.02"))
    room = headroom(run)
    assert (room.left, room.cap) == (Decimal("0.03"), "run")
    assert room.describe() == "this run's cost cap of $0.05 ($0.0200 spent)"
    acme.monthly_cost_cap_usd = Decimal("1")
    acme.save()
    ModelRequest.objects.create(workspace=acme, run=run, source="agent", model="m", cost_usd=Decimal("0.99"))
    room = headroom(run)
    assert (room.left, room.cap) == (Decimal("0.01"), "monthly")
    assert headroom(make_run(acme, max_cost_usd=None)).cap == "monthly"
    acme.monthly_cost_cap_usd = None
    acme.save()
    assert headroom(make_run(acme, max_cost_usd=None)).left is None


def test_the_next_request_is_estimated_from_the_last_one_at_the_price_in_force():
    from datetime import UTC, datetime

    from runs.spending import LastRequest, estimate

    at = datetime(2026, 11, 30, tzinfo=UTC)
    last = LastRequest(prompt_tokens=100_000, output_tokens=500, estimated_tokens=90_000)
    # 10,000 tokens added since: the previous prompt read from the cache, the new part written, the same output.
    kept = estimate("claude-sonnet-5-5", estimated_tokens=100_000, last=last, cache_kept=True, at=at)
    assert kept == (100_000 * Decimal("0.20") + 10_000 * Decimal("2.50") + 500 * 10) / 1_000_000
    # After the guard cut the context, the whole prompt is written to the cache again.
    cut = estimate("claude-sonnet-5-5", estimated_tokens=100_000, last=last, cache_kept=False, at=at)
    assert cut == (110_000 * Decimal("2.50") + 500 * 10) / 1_000_000
    first = estimate("claude-haiku-5-5", estimated_tokens=150_000, last=None, cache_kept=False, at=at)
    assert first == (150_000 * Decimal("0.625") + 1_000 * Decimal("2.50")) / 1_000_000, "the long-prompt tier"
