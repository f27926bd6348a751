"""Seed the published Claude prices per million tokens, valid from 2025-01-01; unknown models stay unpriced."""

from datetime import UTC, datetime

from django.db import migrations

from agent_platform import price_seeding

VALID_FROM = datetime(2025, 1, 1, tzinfo=UTC)

# (model, speed, input, output, 5-minute cache write, 1-hour cache write, cache read), dollars per million tokens,
# as published on Anthropic's pricing page. Only prices known for certain are seeded: anything else is billed zero
# and flagged "unpriced" in the admin until an operator adds its row.
PUBLISHED = [
    ("claude-opus-4-6", "standard", "5", "25", "6.25", "10", "0.50"),
    ("claude-opus-4-6", "fast", "30", "150", "37.50", "60", "3"),
    ("claude-opus-4-5", "standard", "5", "25", "6.25", "10", "0.50"),
    ("claude-opus-4-1", "standard", "15", "75", "18.75", "30", "1.50"),
    ("claude-opus-4", "standard", "15", "75", "18.75", "30", "1.50"),
    ("claude-sonnet-4-6", "standard", "3", "15", "3.75", "6", "0.30"),
    ("claude-sonnet-4-5", "standard", "3", "15", "3.75", "6", "0.30"),
    ("claude-sonnet-4", "standard", "3", "15", "3.75", "6", "0.30"),
    ("claude-haiku-4-5", "standard", "1", "5", "1.25", "2", "0.10"),
]

PRICES = [price_seeding.PublishedPrice(model, speed, VALID_FROM, *rates) for model, speed, *rates in PUBLISHED]


def seed_prices(apps, schema_editor):
    price_seeding.seed_prices(apps, PRICES)


def remove_unused_seeded_prices(apps, schema_editor):
    price_seeding.remove_unused_seeded_prices(apps, PRICES)


class Migration(migrations.Migration):
    dependencies = [("agent_platform", "0002_initial")]

    operations = [migrations.RunPython(seed_prices, remove_unused_seeded_prices)]
