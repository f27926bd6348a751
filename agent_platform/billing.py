"""What a model request costs: exact Decimal arithmetic on the per-million-token prices in force when it was made."""

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal

from django.db.models import Case, IntegerField, Value, When

from .models import Price

MILLION = Decimal(1_000_000)
# ModelRequest.cost_usd keeps 8 decimal places; rounding here means the stored value is the computed one.
COST_QUANTUM = Decimal("0.00000001")
SNAPSHOT_SUFFIX = re.compile(r"-\d{8}$")


def cost_of(
    price: Price,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_input_tokens: int,
    cache_creation_input_tokens: int,
    one_hour_cache_write: int = 0,
) -> Decimal:
    """The cost in dollars; cache writes are priced at the 5-minute rate except the part reported as 1-hour."""
    five_minute_write = max(cache_creation_input_tokens - one_hour_cache_write, 0)
    total = (
        input_tokens * Decimal(price.input_per_mtok)
        + output_tokens * Decimal(price.output_per_mtok)
        + cache_read_input_tokens * Decimal(price.cache_read_per_mtok)
        + five_minute_write * Decimal(price.cache_write_5m_per_mtok)
        + one_hour_cache_write * Decimal(price.cache_write_1h_per_mtok)
    )
    return (total / MILLION).quantize(COST_QUANTUM, rounding=ROUND_HALF_EVEN)


def prompt_tokens_of(*, input_tokens: int, cache_read_input_tokens: int, cache_creation_input_tokens: int) -> int:
    """The prompt's length as prompt-length price tiers count it: input, cache read and cache write together."""
    return input_tokens + cache_read_input_tokens + cache_creation_input_tokens


def price_in_force(model: str, speed: str, at: datetime, prompt_tokens: int = 0) -> Price | None:
    """The price of `model` at `speed` valid at `at` for a prompt of `prompt_tokens`, or None (billed zero, flagged
    unpriced).

    The API answers with the dated snapshot id (claude-sonnet-4-5-20250929) where a request named the alias, so
    a snapshot without a price of its own is billed at its alias's price; an exact row always wins. Fast mode
    has its own rows and never falls back to the standard price. Tiers: the rows sharing the latest `valid_from`
    form the price in force, and of those the one with the highest `min_prompt_tokens` the prompt reaches applies.
    """
    alias = SNAPSHOT_SUFFIX.sub("", model)
    return (
        Price.objects.filter(
            model__in={model, alias}, speed=speed, valid_from__lte=at, min_prompt_tokens__lte=prompt_tokens
        )
        .annotate(exact=Case(When(model=model, then=Value(0)), default=Value(1), output_field=IntegerField()))
        .order_by("exact", "-valid_from", "-min_prompt_tokens")
        .first()
    )


@dataclass(frozen=True)
class Charge:
    price: Price | None
    cost_usd: Decimal

    @property
    def unpriced(self) -> bool:
        return self.price is None


def charge(
    model: str,
    speed: str,
    at: datetime,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_input_tokens: int,
    cache_creation_input_tokens: int,
    one_hour_cache_write: int = 0,
) -> Charge:
    """What a request made at `at` costs, with the price it was billed at (None: unknown model, billed zero).

    A prompt-length tier applies to every token of the request, output included.
    """
    prompt = prompt_tokens_of(
        input_tokens=input_tokens,
        cache_read_input_tokens=cache_read_input_tokens,
        cache_creation_input_tokens=cache_creation_input_tokens,
    )
    price = price_in_force(model, speed, at, prompt)
    if price is None:
        return Charge(None, Decimal(0))
    cost = cost_of(
        price,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_input_tokens=cache_read_input_tokens,
        cache_creation_input_tokens=cache_creation_input_tokens,
        one_hour_cache_write=one_hour_cache_write,
    )
    return Charge(price, cost)
