"""What a model request costs: exact Decimal arithmetic on the per-million-token prices in force."""

from decimal import Decimal

from .models import Price

MILLION = Decimal(1_000_000)


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
        input_tokens * price.input_per_mtok
        + output_tokens * price.output_per_mtok
        + cache_read_input_tokens * price.cache_read_per_mtok
        + five_minute_write * price.cache_write_5m_per_mtok
        + one_hour_cache_write * price.cache_write_1h_per_mtok
    )
    return total / MILLION
