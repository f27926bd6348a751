"""Many model-request rows at random (seeded), and their totals summed in Python, to check the reports' SQL against."""

import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from agent_platform.models import ModelRequest


def make_rows(workspaces, count: int, seed: int = 7) -> list[ModelRequest]:
    rng = random.Random(seed)
    start = datetime(2026, 9, 20, tzinfo=UTC)
    rows = [
        ModelRequest(
            workspace=rng.choice(workspaces),
            source=rng.choice(ModelRequest.Source.values),
            model=rng.choice(["claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5"]),
            input_tokens=rng.randrange(0, 200_000),
            output_tokens=rng.randrange(0, 8_000),
            cache_read_input_tokens=rng.randrange(0, 100_000),
            cache_creation_input_tokens=rng.randrange(0, 20_000),
            cost_usd=Decimal(rng.randrange(0, 10**9)) / Decimal(10**8),
            unpriced=rng.random() < 0.05,
            created_at=start + timedelta(minutes=rng.randrange(0, 60 * 24 * 60)),
        )
        for _ in range(count)
    ]
    return ModelRequest.objects.bulk_create(rows, batch_size=2000)


def python_sums(rows) -> dict:
    return {
        "requests": len(rows),
        "input": sum(row.input_tokens for row in rows),
        "output": sum(row.output_tokens for row in rows),
        "cache_read": sum(row.cache_read_input_tokens for row in rows),
        "cache_write": sum(row.cache_creation_input_tokens for row in rows),
        "total": sum(row.total_tokens for row in rows),
        "cost_usd": sum((row.cost_usd for row in rows), Decimal(0)),
        "unpriced": sum(row.unpriced for row in rows),
    }
