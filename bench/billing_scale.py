"""The admin's billing view at ten million model requests: read from the daily rollup (what the view does) against
the same report summed from the requests themselves (what it did before the rollup), in the same run.

The requests are written by PostgreSQL itself (INSERT ... SELECT over generate_series: a minute or two for ten
million, against the ten a Python COPY would take), into ten bench workspaces over 120 days, then the rollup is
rebuilt from them (`rebuild_usage_days`, which the view's numbers must then equal: checked here too). The view is
timed through Django's test Client in this process (the whole admin stack, session auth, template, ORM).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/billing_scale.py [--requests 10000000] [--reuse] [--timed 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import header, load_average, setup_django, stats, table

WORKSPACES = 10
DAYS = 120
TARGET_MS = 300.0


def seed(requests: int) -> None:
    """Ten bench workspaces and `requests` model requests spread over them and over DAYS days, then the rollup."""
    from django.db import connection, transaction

    from agent_platform.models import ModelRequest, UsageDay, Workspace
    from agent_platform.reports import rebuild_usage_days

    with transaction.atomic():
        ModelRequest.objects.filter(workspace__slug__startswith="bench-billing-").delete()
        UsageDay.objects.filter(workspace__slug__startswith="bench-billing-").delete()
        Workspace.objects.filter(slug__startswith="bench-billing-").delete()
        ids = [
            Workspace.objects.create(name=f"Bench billing {n}", slug=f"bench-billing-{n}").pk for n in range(WORKSPACES)
        ]
    table_name = ModelRequest._meta.db_table
    started = time.monotonic()
    with connection.cursor() as cursor:
        # Written in chunks (each its own transaction: autocommit) so progress shows and no transaction holds ten
        # million rows.
        chunk = 1_000_000
        for first in range(0, requests, chunk):
            count = min(chunk, requests - first)
            cursor.execute(
                f"""
                INSERT INTO {table_name} (workspace_id, run_id, source, model, speed, input_tokens, output_tokens,
                    cache_read_input_tokens, cache_creation_input_tokens, cost_usd, price_id, unpriced, scripted,
                    created_at)
                SELECT (%s::bigint[])[1 + floor(random() * {WORKSPACES})::int], NULL,
                    (ARRAY['agent', 'agent', 'agent', 'judge', 'extraction', 'compaction'])[1 + floor(random() * 6)::int],
                    (ARRAY['claude-opus-4-6', 'claude-sonnet-4-6', 'claude-haiku-4-5'])[1 + floor(random() * 3)::int],
                    'standard', 300 + (i * 7919) %% 1200, 40 + (i * 104729) %% 260, (i * 31) %% 9000,
                    (i * 17) %% 800, ((i * 7919) %% 100000) / 100000000.0, NULL, (i %% 97 = 0), FALSE,
                    now() - random() * {DAYS} * interval '1 day'
                FROM generate_series(%s::bigint, %s::bigint) AS i
                """,  # noqa: S608 - the model's own table name and constants
                [ids, first + 1, first + count],
            )
            print(f"  {first + count:>12,} requests written ({time.monotonic() - started:.0f} s)", file=sys.stderr)
        cursor.execute(f"VACUUM ANALYZE {table_name}")
    rolled = time.monotonic()
    days = rebuild_usage_days()
    print(f"  rollup rebuilt: {days:,} day rows in {time.monotonic() - rolled:.1f} s", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=10_000_000)
    parser.add_argument("--reuse", action="store_true", help="measure the requests already seeded")
    parser.add_argument("--timed", type=int, default=20, help="timed requests per view")
    parser.add_argument("--reference-timed", type=int, default=3, help="timed reports summed from the requests")
    args = parser.parse_args()

    os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from agent_platform.admin_billing import billing_report
    from agent_platform.models import ModelRequest, UsageDay, Workspace
    from agent_platform.reports import usage_by, usage_totals

    if connection.vendor != "postgresql":
        sys.exit("billing_scale needs PostgreSQL: set DATABASE_URL=postgres://...")
    print(header("Admin billing at scale: the daily rollup against the requests"))
    if not args.reuse:
        seed(args.requests)
    stored = ModelRequest.objects.count()
    print(f"model requests stored: {stored:,}   day rows: {UsageDay.objects.count():,}")

    # The rollup says what the requests say (the whole table, one report of each).
    from_rollup = billing_report(UsageDay.objects.all(), "model")
    real = ModelRequest.objects.filter(scripted=False)
    assert from_rollup["totals"] == usage_totals(real), "the rollup's totals differ from the requests'"
    assert from_rollup["by_month"] == usage_by(real, ["workspace", "month", "model"], newest_first=True)

    user_model = get_user_model()
    staff = user_model.objects.filter(username="bench-billing").first() or user_model.objects.create_superuser(
        "bench-billing", password="bench-billing-password"
    )
    client = Client()
    client.force_login(staff)
    url = reverse("admin:agent_platform_billing")
    one = Workspace.objects.get(slug="bench-billing-0")
    views: list[tuple[str, str]] = [
        ("billing view, this month", url),
        ("billing view, all time by model", f"{url}?month=&split=model"),
        ("billing view, one workspace, all time", f"{url}?month=&workspace={one.pk}"),
    ]

    def timed(call: Callable[[], Any], count: int) -> list[float]:
        call()  # warm-up
        times = []
        for _ in range(count):
            began = time.perf_counter()
            call()
            times.append((time.perf_counter() - began) * 1000)
        return times

    rows = []
    for label, address in views:

        def view(address: str = address) -> None:
            response = client.get(address)
            assert response.status_code == 200, (address, response.status_code)

        ms = stats(timed(view, args.timed))
        status = "met" if ms["p95"] < TARGET_MS else "MISSED"
        rows.append([label, args.timed, ms["median"], ms["p95"], ms["max"], f"{status} (<{TARGET_MS:.0f})"])
    # The reference: the same all-time report summed from the requests, as the view did before the rollup.
    reference = stats(timed(lambda: billing_report(ModelRequest.objects.all(), "model"), args.reference_timed))
    rollup = stats(timed(lambda: billing_report(UsageDay.objects.all(), "model"), args.timed))
    rows.append(
        [
            "report from the requests (before)",
            args.reference_timed,
            *[reference[k] for k in ("median", "p95", "max")],
            "",
        ]
    )
    rows.append(["report from the rollup (now)", args.timed, *[rollup[k] for k in ("median", "p95", "max")], ""])
    print(table(["what", "n", "median ms", "p95 ms", "max ms", "target"], rows))
    print(
        f"rollup / requests, median: {rollup['median'] / reference['median']:.4f}   load average at end: {load_average()}"
    )


if __name__ == "__main__":
    main()
