"""Data scale: p50/p95 latency of the list, run, events, usage and billing endpoints on a seeded PostgreSQL.

Seed first with bench/seed_scale.py (same DATABASE_URL). Requests go through Django's test Client in this process:
the whole Django stack (middleware, auth, the API key's rate limit in Redis, views, templates, the ORM against
PostgreSQL) without an HTTP server in front. `--explain` prints EXPLAIN ANALYZE of each endpoint's slowest query.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/data_scale.py [--requests 50] [--explain]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import header, progress, stats, table

# Targets from the issue, by endpoint label prefix.
TARGETS = {"runs list API": 100.0, "runs list page": 100.0, "usage totals": 300.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=50, help="timed requests per endpoint")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--explain", action="store_true", help="EXPLAIN ANALYZE each endpoint's slowest query")
    parser.add_argument("--only", help="measure only endpoints whose label contains this text (e.g. usage)")
    args = parser.parse_args()

    # the bench operator issues thousands of API calls a minute; the limiter's Redis round trip still counts
    os.environ.setdefault("API_RATE_LIMIT_PER_MINUTE", "100000000")
    os.environ.setdefault("ALLOWED_HOSTS", "testserver,127.0.0.1,localhost")
    from _common import setup_django

    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from agent_platform.models import ApiKey, ModelRequest, Workspace
    from runs.models import Event, Run

    if connection.vendor != "postgresql":
        sys.exit("data_scale needs PostgreSQL: set DATABASE_URL=postgres://...")
    main_ws = Workspace.objects.filter(slug="bench-main").first()
    if main_ws is None:
        sys.exit("no bench-main workspace: run bench/seed_scale.py first")
    big_run = Run.objects.filter(workspace=main_ws, metadata__bench="500 events").first()
    if big_run is None:
        sys.exit("no run with 500 events: run bench/seed_scale.py first")
    key, secret = ApiKey.issue(main_ws, name="data-scale bench")
    operator = get_user_model().objects.get(username="bench")

    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    web = Client()
    web.force_login(operator)

    # A cursor deep in the list: what an export walking every page meets on its 50th page.
    deep_cursor: str | None = None
    deep_page = 1
    for _ in range(49):
        params: dict[str, str | int] = {"limit": 100, **({"cursor": deep_cursor} if deep_cursor else {})}
        following = api.get("/api/v1/runs", params).json()["next_cursor"]
        if following is None:
            break  # a small seed has fewer pages: measure the last one
        deep_cursor, deep_page = following, deep_page + 1
    deep_params: dict[str, str | int] = {"limit": 100, **({"cursor": deep_cursor} if deep_cursor else {})}
    billing_url = reverse("admin:agent_platform_billing")

    endpoints: list[tuple[str, Callable[[], Any]]] = [
        ("runs list API (20)", lambda: api.get("/api/v1/runs")),
        ("runs list API (100)", lambda: api.get("/api/v1/runs", {"limit": 100})),
        ("runs list API status=failed", lambda: api.get("/api/v1/runs", {"status": "failed"})),
        (
            f"runs list API page {deep_page} (cursor)",
            lambda: api.get("/api/v1/runs", deep_params),
        ),
        ("runs list page", lambda: web.get("/")),
        ("runs list page 20", lambda: web.get("/", {"page": 20})),
        ("run page, 500 events", lambda: web.get(f"/runs/{big_run.public_id}/")),
        ("run API, 500 events", lambda: api.get(f"/api/v1/runs/{big_run.public_id}")),
        ("events page API (100)", lambda: api.get(f"/api/v1/runs/{big_run.public_id}/events", {"limit": 100})),
        (
            "events page API after=400",
            lambda: api.get(f"/api/v1/runs/{big_run.public_id}/events", {"limit": 100, "after": 400}),
        ),
        ("usage totals API (by day)", lambda: api.get("/api/v1/usage")),
        ("usage totals API (by model)", lambda: api.get("/api/v1/usage", {"group_by": "model"})),
        ("usage page", lambda: web.get("/usage/")),
        ("admin billing (month)", lambda: web.get(billing_url)),
        ("admin billing (all time)", lambda: web.get(billing_url, {"month": ""})),
        ("admin billing (workspace)", lambda: web.get(billing_url, {"workspace": main_ws.pk})),
    ]

    if args.only:
        endpoints = [(label, request) for label, request in endpoints if args.only in label]
    print(header("Data scale"))
    counts = {
        "runs": Run.objects.count(),
        "events": Event.objects.count(),
        "model requests": ModelRequest.objects.count(),
        "runs in bench-main": Run.objects.filter(workspace=main_ws).count(),
    }
    print("data: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()) + "\n")

    rows = []
    slowest: dict[str, tuple[float, str]] = {}
    try:
        for label, request in progress(endpoints, len(endpoints), "endpoints"):
            for _ in range(args.warmup):
                response = request()
            status = response.status_code
            timings = []
            for _ in range(args.requests):
                started = time.perf_counter()
                response = request()
                timings.append((time.perf_counter() - started) * 1000)
                if response.status_code != status:
                    status = response.status_code
            with CaptureQueriesContext(connection) as captured:
                request()
            queries = captured.captured_queries
            worst = max(queries, key=lambda q: float(q["time"]), default={"time": "0", "sql": ""})
            slowest[label] = (float(worst["time"]) * 1000, worst["sql"])
            summary = stats(timings)
            target = next((ms for prefix, ms in TARGETS.items() if label.startswith(prefix)), None)
            verdict = "" if target is None else ("met" if summary["p95"] < target else f"MISSED (<{target:.0f})")
            if target is not None and not verdict.startswith("MISSED"):
                verdict = f"met (<{target:.0f})"
            rows.append(
                [
                    label,
                    status,
                    summary["median"],
                    summary["p95"],
                    summary["min"],
                    summary["max"],
                    len(queries),
                    slowest[label][0],
                    verdict,
                ]
            )
    finally:
        key.delete()

    print(
        table(
            ["endpoint", "HTTP", "p50 ms", "p95 ms", "min ms", "max ms", "queries", "slowest query ms", "target"],
            rows,
        )
    )
    if args.explain:
        with connection.cursor() as cursor:
            for label, (ms, sql) in slowest.items():
                if not sql or not sql.lstrip().upper().startswith("SELECT"):
                    continue
                print(f"\n## {label}: slowest query {ms:.1f} ms\n{sql}\n")
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
                print("\n".join(row[0] for row in cursor.fetchall()))


if __name__ == "__main__":
    main()
