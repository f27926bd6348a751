"""Seed the Claude 5 lineup's prices as of November 2026, each from the day it took effect; older rows stay."""

from datetime import UTC, datetime

from django.db import migrations

from agent_platform import price_seeding

# Haiku 5.5 bills a whole request at its long-prompt rates once the prompt (input + cache read + cache write) passes
# 100,000 tokens: the second tier starts at 100,001.
HAIKU_LONG_PROMPT = 100_001

# (model, speed, min_prompt_tokens, valid_from, input, output, 5-minute cache write, 1-hour cache write, cache read),
# dollars per million tokens, from the models' overview pages and the pricing page (Fable 5.1's cache read is its
# own 0.025x; Opus 5.5's is 0.05x). Fast mode doubles every rate, as it does for
# Opus 5. Deprecated and legacy models keep their rows: a request made while they were served bills at their price.
PUBLISHED = [
    ("claude-sonnet-5", "standard", 0, "2026-06-30", "2", "10", "2.50", "4", "0.20"),
    ("claude-opus-5", "standard", 0, "2026-07-24", "5", "25", "6.25", "10", "0.50"),
    ("claude-opus-5", "fast", 0, "2026-07-24", "10", "50", "12.50", "20", "1"),
    ("claude-fable-5-1", "standard", 0, "2026-09-01", "10", "50", "12.50", "20", "0.25"),
    ("claude-opus-5-5", "standard", 0, "2026-09-22", "4", "20", "5", "8", "0.20"),
    ("claude-opus-5-5", "fast", 0, "2026-09-22", "8", "40", "10", "16", "0.40"),
    ("claude-sonnet-5-5", "standard", 0, "2026-09-28", "2", "10", "2.50", "4", "0.20"),
    # Price trackers report a cut of Sonnet 5.5's cache read to $0.10 from 2026-10-07; the model's own page still says
    # $0.20 and the pricing page could not be read to confirm it, so no row for it: add one in the admin once it is.
    ("claude-haiku-5-5", "standard", 0, "2026-10-07", "0.10", "0.50", "0.125", "0.20", "0.01"),
    ("claude-haiku-5-5", "standard", HAIKU_LONG_PROMPT, "2026-10-07", "0.50", "2.50", "0.625", "1", "0.05"),
]


def valid_from(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


PRICES = [
    price_seeding.PublishedPrice(model, speed, valid_from(day), *rates, min_prompt_tokens=tier)
    for model, speed, tier, day, *rates in PUBLISHED
]


def seed_prices(apps, schema_editor):
    price_seeding.seed_prices(apps, PRICES)


def remove_unused_seeded_prices(apps, schema_editor):
    price_seeding.remove_unused_seeded_prices(apps, PRICES)


class Migration(migrations.Migration):
    # The name it was first applied under: a database that recorded it counts this one as applied.
    replaces = [("agent_platform", "0006_i13_prices_2026_11")]

    dependencies = [("agent_platform", "0005_price_tiers")]

    operations = [migrations.RunPython(seed_prices, remove_unused_seeded_prices)]
