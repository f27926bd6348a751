"""Published prices as the data migrations seed them: one way to write a price row, and to take it back out.

Migrations pass their historical app registry, so this module imports no model: it works on the Price of the
migration's own state.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.apps.registry import Apps


@dataclass(frozen=True)
class PublishedPrice:
    """One published price: dollars per million tokens, written as decimal strings, valid from an instant on."""

    model: str
    speed: str
    valid_from: datetime
    input: str
    output: str
    cache_write_5m: str
    cache_write_1h: str
    cache_read: str
    # None for rows seeded before prices had prompt-length tiers: that migration's Price has no such field.
    min_prompt_tokens: int | None = None

    def key(self) -> dict[str, Any]:
        """The fields that name the row (the unique constraint of the price table)."""
        key: dict[str, Any] = {"model": self.model, "speed": self.speed, "valid_from": self.valid_from}
        if self.min_prompt_tokens is not None:
            key["min_prompt_tokens"] = self.min_prompt_tokens
        return key

    def rates(self) -> dict[str, Any]:
        return {
            "input_per_mtok": Decimal(self.input),
            "output_per_mtok": Decimal(self.output),
            "cache_write_5m_per_mtok": Decimal(self.cache_write_5m),
            "cache_write_1h_per_mtok": Decimal(self.cache_write_1h),
            "cache_read_per_mtok": Decimal(self.cache_read),
            "supports_vision": True,
        }


def seed_prices(apps: Apps, prices: Iterable[PublishedPrice]) -> None:
    """Write each price, or correct its rates where the row already exists."""
    price_model = apps.get_model("agent_platform", "Price")
    for price in prices:
        price_model._default_manager.update_or_create(**price.key(), defaults=price.rates())


def remove_unused_seeded_prices(apps: Apps, prices: Iterable[PublishedPrice]) -> None:
    """Undo `seed_prices`, except the rows some request was billed at: those are part of that request's history."""
    price_model = apps.get_model("agent_platform", "Price")
    model_request = apps.get_model("agent_platform", "ModelRequest")
    used = model_request._default_manager.filter(price__isnull=False).values("price_id")
    for price in prices:
        price_model._default_manager.filter(**price.key()).exclude(pk__in=used).delete()
