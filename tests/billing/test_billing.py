"""Pricing and totals: exact Decimal costs, prices in force by date and speed, unknown models flagged, sums exact."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from agent_platform.billing import charge, cost_of, price_in_force
from agent_platform.models import ModelRequest, Price
from agent_platform.reports import total_of, usage_by, usage_totals
from runs.usage import record_model_request
from tests.support.factories import make_run
from tests.support.usage_rows import make_rows, python_sums

pytestmark = pytest.mark.django_db

TOKENS = {
    "input_tokens": 1_234_567,
    "output_tokens": 89_012,
    "cache_read_input_tokens": 345_678,
    "cache_creation_input_tokens": 9_010,
}


def add_price(model: str, valid_from: datetime, input_: str, output: str, speed: str = "standard") -> Price:
    return Price.objects.create(
        model=model,
        speed=speed,
        input_per_mtok=Decimal(input_),
        output_per_mtok=Decimal(output),
        cache_write_5m_per_mtok=Decimal(input_) * Decimal("1.25"),
        cache_write_1h_per_mtok=Decimal(input_) * 2,
        cache_read_per_mtok=Decimal(input_) / 10,
        valid_from=valid_from,
    )


def test_seeded_prices_are_the_published_ones():
    at = datetime(2026, 6, 1, tzinfo=UTC)
    opus = price_in_force("claude-opus-4-6", "standard", at)
    assert (opus.input_per_mtok, opus.output_per_mtok) == (Decimal(5), Decimal(25))
    assert (opus.cache_write_5m_per_mtok, opus.cache_write_1h_per_mtok, opus.cache_read_per_mtok) == (
        Decimal("6.25"),
        Decimal(10),
        Decimal("0.5"),
    )
    sonnet = price_in_force("claude-sonnet-4-5", "standard", at)
    assert (sonnet.input_per_mtok, sonnet.output_per_mtok, sonnet.cache_read_per_mtok) == (3, 15, Decimal("0.3"))
    haiku = price_in_force("claude-haiku-4-5", "standard", at)
    assert (haiku.input_per_mtok, haiku.output_per_mtok, haiku.cache_write_1h_per_mtok) == (1, 5, 2)
    fast = price_in_force("claude-opus-4-6", "fast", at)
    assert (fast.input_per_mtok, fast.output_per_mtok, fast.cache_write_5m_per_mtok) == (30, 150, Decimal("37.5"))
    assert all(price.supports_vision for price in Price.objects.all())
    assert price_in_force("claude-opus-4-6", "standard", datetime(2024, 12, 31, tzinfo=UTC)) is None


def test_cost_is_exact_to_the_last_digit():
    price = price_in_force("claude-sonnet-4-6", "standard", datetime(2026, 6, 1, tzinfo=UTC))
    cost = cost_of(price, **TOKENS, one_hour_cache_write=1_000)
    # 1,234,567 × 3 + 89,012 × 15 + 345,678 × 0.30 + 8,010 × 3.75 + 1,000 × 6, per million tokens.
    expected = (
        Decimal(1_234_567) * 3
        + Decimal(89_012) * 15
        + Decimal(345_678) * Decimal("0.30")
        + Decimal(8_010) * Decimal("3.75")
        + Decimal(1_000) * 6
    ) / Decimal(1_000_000)
    assert cost == expected == Decimal("5.1786219")


def test_price_change_mid_month_applies_from_its_date_only():
    add_price("claude-test-1", datetime(2026, 3, 1, tzinfo=UTC), "2", "10")
    add_price("claude-test-1", datetime(2026, 3, 15, 12, tzinfo=UTC), "4", "20")
    one_million_in = {**dict.fromkeys(TOKENS, 0), "input_tokens": 1_000_000}
    before = charge("claude-test-1", "standard", datetime(2026, 3, 15, 11, 59, 59, tzinfo=UTC), **one_million_in)
    after = charge("claude-test-1", "standard", datetime(2026, 3, 15, 12, tzinfo=UTC), **one_million_in)
    assert (before.cost_usd, after.cost_usd) == (Decimal(2), Decimal(4))
    assert before.price.valid_from.day == 1 and after.price.valid_from.day == 15


def test_a_price_added_later_never_rewrites_a_stored_cost(acme):
    add_price("claude-test-2", datetime(2025, 1, 1, tzinfo=UTC), "2", "10")
    run = make_run(acme, model="claude-test-2")
    request = record_model_request(run, source="agent", model="claude-test-2", usage={"input_tokens": 500_000})
    add_price("claude-test-2", request.created_at + timedelta(microseconds=1), "8", "40")
    request.refresh_from_db()
    assert request.cost_usd == Decimal(1) and request.price.input_per_mtok == 2
    later = record_model_request(run, source="agent", model="claude-test-2", usage={"input_tokens": 500_000})
    assert later.cost_usd == Decimal(4)


def test_fast_mode_is_billed_at_its_own_price(acme):
    run = make_run(acme, model="claude-opus-4-6")
    usage = {"input_tokens": 100_000, "output_tokens": 10_000, "cache_read_input_tokens": 50_000}
    standard = record_model_request(run, source="agent", model="claude-opus-4-6", usage=usage)
    fast = record_model_request(run, source="agent", model="claude-opus-4-6", usage={**usage, "speed": "fast"})
    assert standard.cost_usd == Decimal("0.5") + Decimal("0.25") + Decimal("0.025")
    assert fast.speed == "fast" and fast.price.speed == "fast"
    assert fast.cost_usd == Decimal(3) + Decimal("1.5") + Decimal("0.15") == standard.cost_usd * 6


def test_fast_mode_of_a_model_without_a_fast_price_is_unpriced_not_billed_at_standard(acme):
    run = make_run(acme, model="claude-sonnet-4-6")
    request = record_model_request(
        run, source="agent", model="claude-sonnet-4-6", usage={"input_tokens": 1000, "speed": "fast"}
    )
    assert request.unpriced and request.cost_usd == 0 and request.price is None


def test_unknown_model_is_billed_zero_and_flagged(acme):
    run = make_run(acme, model="claude-unknown-9")
    request = record_model_request(run, source="judge", model="claude-unknown-9", usage={"input_tokens": 10_000})
    assert request.unpriced and request.cost_usd == 0 and request.price is None
    assert usage_totals(ModelRequest.objects.all())["unpriced"] == 1
    run.refresh_from_db()
    assert run.usage_requests == 1 and run.usage_input == 10_000 and run.cost_usd == 0


def test_dated_snapshot_is_billed_at_its_alias_price():
    tokens = {**dict.fromkeys(TOKENS, 0), "output_tokens": 1_000_000}
    snapshot = charge("claude-sonnet-4-5-20250929", "standard", datetime(2026, 1, 1, tzinfo=UTC), **tokens)
    assert snapshot.price.model == "claude-sonnet-4-5" and snapshot.cost_usd == Decimal(15)


def test_totals_equal_the_sums_of_the_rows_to_the_last_digit(acme, umbrella):
    rows = make_rows([acme, umbrella], 3000)
    assert usage_totals(ModelRequest.objects.all()) == python_sums(rows)
    acme_rows = [row for row in rows if row.workspace_id == acme.pk]
    assert usage_totals(ModelRequest.objects.for_workspace(acme)) == python_sums(acme_rows)


def test_grouped_totals_add_up_to_the_whole_and_each_group_to_its_rows(acme, umbrella):
    rows = make_rows([acme, umbrella], 2000, seed=11)
    whole = usage_totals(ModelRequest.objects.all())
    for group_by in ["day", "month", "model", "source", "workspace", ("workspace", "month", "model")]:
        groups = usage_by(ModelRequest.objects.order_by("-created_at"), group_by)
        assert sum(group["cost_usd"] for group in groups) == whole["cost_usd"]
        assert sum(group["total"] for group in groups) == whole["total"]
        assert sum(group["requests"] for group in groups) == whole["requests"]
    by_model = {group["model"]: group for group in usage_by(ModelRequest.objects.all(), "model")}
    opus_rows = [row for row in rows if row.model == "claude-opus-4-6"]
    expected = python_sums(opus_rows)
    assert {key: by_model["claude-opus-4-6"][key] for key in expected} == expected
    months = usage_by(ModelRequest.objects.all(), "month", newest_first=True)
    assert [group["month"].month for group in months] == [11, 10, 9]


def test_usage_by_refuses_an_unknown_group():
    with pytest.raises(ValueError):
        usage_by(ModelRequest.objects.all(), "colour")


def test_large_costs_still_sum_to_the_last_digit(acme):
    # 17 significant digits: more than a float holds, which is what SQLite's decimal column sums in.
    costs = [Decimal("987654.12345678") - Decimal(i) / Decimal(10**8) for i in range(1500)]
    ModelRequest.objects.bulk_create(ModelRequest(workspace=acme, source="agent", model="m", cost_usd=c) for c in costs)
    assert usage_totals(ModelRequest.objects.all())["cost_usd"] == sum(costs, Decimal(0))
    assert usage_by(ModelRequest.objects.all(), "workspace")[0]["cost_usd"] == sum(costs, Decimal(0))


def test_totals_added_up_from_groups_equal_the_one_query_totals(acme):
    for index, (model, source) in enumerate([("claude-sonnet-4-6", "agent"), ("claude-opus-4-6", "judge")] * 3):
        ModelRequest.objects.create(
            workspace=acme,
            source=source,
            model=model,
            input_tokens=1000 + index,
            output_tokens=7 * index,
            cache_read_input_tokens=3,
            cache_creation_input_tokens=index,
            cost_usd=Decimal("0.00000017") * (index + 1),
            unpriced=index % 2 == 0,
        )
    requests = ModelRequest.objects.for_workspace(acme)
    for group_by in ("day", "model", "source"):
        assert total_of(usage_by(requests, group_by)) == usage_totals(requests)
