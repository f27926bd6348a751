"""GET /usage: the workspace's model requests summed by day, model or source, with exact decimal costs."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from agent_platform.models import ModelRequest
from tests.support.factories import make_run


@pytest.fixture
def requests_of_acme(acme, umbrella):
    run = make_run(acme)
    rows = [
        (datetime(2026, 9, 1, 10, tzinfo=UTC), "agent", "claude-sonnet-4-6", 100, 10, "0.00012345"),
        (datetime(2026, 9, 1, 23, tzinfo=UTC), "judge", "claude-sonnet-4-6", 50, 5, "0.00000001"),
        (datetime(2026, 9, 2, 8, tzinfo=UTC), "agent", "claude-haiku-4-5", 10, 1, "0.10000000"),
    ]
    for created_at, source, model, input_tokens, output_tokens, cost in rows:
        ModelRequest.objects.create(
            workspace=acme,
            run=run,
            source=source,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_input_tokens=3,
            cost_usd=Decimal(cost),
            created_at=created_at,
        )
    # Another workspace's spending never shows up in Acme's usage.
    ModelRequest.objects.create(workspace=umbrella, source="agent", model="m", input_tokens=9999, cost_usd=Decimal(5))


def test_usage_by_day_sums_exact_costs(api, requests_of_acme):
    body = api.get("/usage?group_by=day").json()
    assert body["totals"] == {
        "requests": 3,
        "input": 160,
        "output": 16,
        "cache_read": 9,
        "cache_write": 0,
        "total": 185,
        "cost_usd": "0.10012346",
    }
    assert [(g["key"], g["requests"], g["cost_usd"]) for g in body["groups"]] == [
        ("2026-09-01", 2, "0.00012346"),
        ("2026-09-02", 1, "0.1"),
    ]


def test_usage_by_model_and_by_source(api, requests_of_acme):
    by_model = {g["key"]: g["requests"] for g in api.get("/usage?group_by=model").json()["groups"]}
    assert by_model == {"claude-haiku-4-5": 1, "claude-sonnet-4-6": 2}
    by_source = {g["key"]: g["total"] for g in api.get("/usage?group_by=source").json()["groups"]}
    assert by_source == {"agent": 100 + 10 + 3 + 10 + 1 + 3, "judge": 58}


def test_usage_between_from_and_to(api, requests_of_acme):
    body = api.get("/usage?group_by=source&from=2026-09-01T12:00:00Z&to=2026-09-03T00:00:00Z").json()
    assert body["totals"]["requests"] == 2
    assert {g["key"] for g in body["groups"]} == {"judge", "agent"}


def test_usage_refuses_an_unknown_grouping(api):
    response = api.get("/usage?group_by=planet")
    assert response.status_code == 400
    assert "group_by" in response.json()["error"]["message"]


def test_usage_of_an_empty_workspace_is_zero(api):
    body = api.get("/usage").json()
    assert body["totals"]["requests"] == 0 and body["totals"]["cost_usd"] == "0" and body["groups"] == []


def test_costs_are_plain_decimal_strings_never_exponents(api, acme):
    ModelRequest.objects.create(workspace=acme, source="agent", model="m", cost_usd=Decimal("10.00000000"))
    assert api.get("/usage").json()["totals"]["cost_usd"] == "10"
    run = make_run(acme, cost_usd=Decimal("10.00000000"))
    assert api.get(f"/runs/{run.public_id}").json()["usage"]["cost_usd"] == "10"
