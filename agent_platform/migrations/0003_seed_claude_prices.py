"""Seed the published Claude prices per million tokens, valid from 2025-01-01; unknown models stay unpriced."""

from datetime import UTC, datetime
from decimal import Decimal

from django.db import migrations

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


def seed_prices(apps, schema_editor):
    Price = apps.get_model("agent_platform", "Price")
    for model, speed, input_, output, write_5m, write_1h, read in PUBLISHED:
        Price.objects.update_or_create(
            model=model,
            speed=speed,
            valid_from=VALID_FROM,
            defaults={
                "input_per_mtok": Decimal(input_),
                "output_per_mtok": Decimal(output),
                "cache_write_5m_per_mtok": Decimal(write_5m),
                "cache_write_1h_per_mtok": Decimal(write_1h),
                "cache_read_per_mtok": Decimal(read),
                "supports_vision": True,
            },
        )


def remove_unused_seeded_prices(apps, schema_editor):
    Price = apps.get_model("agent_platform", "Price")
    ModelRequest = apps.get_model("agent_platform", "ModelRequest")
    # A price a request was billed at is part of that request's history: keep it.
    used = ModelRequest.objects.filter(price__isnull=False).values("price_id")
    for model, speed, *_ in PUBLISHED:
        Price.objects.filter(model=model, speed=speed, valid_from=VALID_FROM).exclude(pk__in=used).delete()


class Migration(migrations.Migration):
    dependencies = [("agent_platform", "0002_initial")]

    operations = [migrations.RunPython(seed_prices, remove_unused_seeded_prices)]
