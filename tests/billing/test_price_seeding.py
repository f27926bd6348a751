"""The one seeding function of the price migrations: it writes a row, corrects it, and takes back only unbilled rows."""

import importlib
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.apps import apps

from agent_platform.models import ModelRequest, Price
from agent_platform.price_seeding import PublishedPrice, remove_unused_seeded_prices, seed_prices

pytestmark = pytest.mark.django_db

DAY = datetime(2030, 1, 1, tzinfo=UTC)


def published(model: str, input_: str = "1", tier: int | None = 0) -> PublishedPrice:
    return PublishedPrice(model, "standard", DAY, input_, "5", "1.25", "2", "0.10", min_prompt_tokens=tier)


def test_seeding_writes_a_row_and_seeding_again_corrects_its_rates():
    seed_prices(apps, [published("claude-test-1")])
    seed_prices(apps, [published("claude-test-1", input_="1.5")])
    (row,) = Price.objects.filter(model="claude-test-1")
    assert row.input_per_mtok == Decimal("1.5")
    assert (row.output_per_mtok, row.cache_read_per_mtok, row.valid_from) == (Decimal(5), Decimal("0.1"), DAY)
    assert row.supports_vision


def test_unseeding_keeps_a_row_some_request_was_billed_at(acme):
    seed_prices(apps, [published("claude-test-billed"), published("claude-test-unbilled")])
    billed = Price.objects.get(model="claude-test-billed")
    ModelRequest.objects.create(workspace=acme, source="agent", model="claude-test-billed", price=billed)
    remove_unused_seeded_prices(apps, [published("claude-test-billed"), published("claude-test-unbilled")])
    assert list(Price.objects.filter(model__startswith="claude-test-").values_list("model", flat=True)) == [
        "claude-test-billed"
    ]


def test_a_row_seeded_before_tiers_is_named_without_the_tier_field():
    # Migration 0003 runs on a Price that has no min_prompt_tokens yet: its rows must not name that field.
    assert "min_prompt_tokens" not in published("claude-test-1", tier=None).key()
    assert published("claude-test-1", tier=100_001).key()["min_prompt_tokens"] == 100_001


def test_both_price_migrations_seed_through_it():
    first = importlib.import_module("agent_platform.migrations.0003_seed_claude_prices")
    lineup = importlib.import_module("agent_platform.migrations.0006_prices_2026_11")
    assert all(price.min_prompt_tokens is None for price in first.PRICES)
    assert {price.min_prompt_tokens for price in lineup.PRICES} == {0, lineup.HAIKU_LONG_PROMPT}
    assert len(first.PRICES) == len(first.PUBLISHED) and len(lineup.PRICES) == len(lineup.PUBLISHED)
