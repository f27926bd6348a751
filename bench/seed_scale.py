"""Seeds PostgreSQL with runs, events and model requests at scale for bench/data_scale.py, through COPY.

Default size is a tenth of the target scale (10,000 runs, 200,000 events, 100,000 model requests); `--full` seeds
the target itself: 100,000 runs, 2,000,000 events and 1,000,000 model requests. Half of the runs belong to the workspace the
benchmark queries (`bench-main`, operator `bench` / password `bench`); the rest are spread over nine others, so
every query has to pick its workspace out of a shared table. One run of bench-main (metadata {"bench": "500 events"})
gets exactly 500 events. Runs span the last 120 days.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python manage.py migrate
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench .venv/bin/python bench/seed_scale.py [--full]
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import sys
from decimal import Decimal
from typing import TYPE_CHECKING

from _common import Progress, header, setup_django

if TYPE_CHECKING:
    from django.db.models import Model

MAIN_WORKSPACE = "bench-main"
OTHER_WORKSPACES = 9
OPERATOR = "bench"
DAYS = 120
BIG_RUN_EVENTS = 500
BATCH = 5_000
MODELS = ["claude-sonnet-4-6", "claude-sonnet-4-6", "claude-sonnet-4-6", "claude-opus-4-6", "claude-haiku-4-5"]
TASKS = [
    "Find the cheapest cast iron casserole under £80 and report its price and delivery options.",
    "Fill in the contact form with the test customer's details and submit it.",
    "List the five newest articles in the transport section with their publication dates.",
    "Check whether the documentation explains cursor pagination and quote the relevant paragraph.",
    "Add two items to the basket and report the total shown at checkout, without paying.",
]
SCREEN_URL = "/runs/{run}/screenshots/{seq}.png"


def fast_public_id(rng: random.Random, prefix: str) -> str:
    # ids.new_public_id draws 24 characters from `secrets` one by one: too slow for two million rows
    return f"{prefix}_{rng.getrandbits(120):030x}"[: len(prefix) + 25]


def utc(ts: datetime.datetime) -> str:
    return ts.isoformat()


def event_payloads(rng: random.Random, count: int, public_run: str) -> list[tuple[str, dict]]:
    """A plausible event stream of `count` events: started, turns of message/tool_use/tool_result/usage, finished."""
    events: list[tuple[str, dict]] = [("run.started", {"worker": "bench@host", "start_url": "http://shop.test/"})]
    turn = 0
    while len(events) < count - 1:
        turn += 1
        tool_id = f"toolu_{rng.getrandbits(96):024x}"
        action = rng.choice(["navigate", "left_click", "read_page", "type", "scroll", "screenshot"])
        events.append(("agent.message", {"turn": turn, "text": "I will " + rng.choice(TASKS).lower()[:90]}))
        events.append(
            (
                "agent.tool_use",
                {"turn": turn, "id": tool_id, "name": action, "toolset": "browser", "input": {"ref": f"e{turn}"}},
            )
        )
        result: dict = {
            "tool_use_id": tool_id,
            "is_error": rng.random() < 0.03,
            "content": [{"type": "text", "text": 'Clicked.\n- button "Add to basket" [ref=e41]\n' * 3}],
        }
        if action == "screenshot":
            result["screenshot_url"] = SCREEN_URL.format(run=public_run, seq=len(events) + 1)
        events.append(("agent.tool_result", result))
        events.append(
            (
                "agent.usage",
                {"source": "agent", "input_tokens": rng.randrange(200, 3000), "output_tokens": rng.randrange(20, 400)},
            )
        )
    events = events[: count - 1]
    events.append(("run.finished", {"status": "succeeded", "turns": turn}))
    return events


def seed(runs: int, events: int, requests: int, seed_value: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction

    from agent_platform import ids
    from agent_platform.models import Membership, Price, Workspace
    from runs.models import Run

    rng = random.Random(seed_value)
    now = datetime.datetime.now(datetime.UTC)
    print(f"seeding {runs:,} runs, {events:,} events, {requests:,} model requests", file=sys.stderr)

    with transaction.atomic():
        main = Workspace.objects.create(name="Bench main", slug=MAIN_WORKSPACE)
        workspaces = [main] + [
            Workspace.objects.create(name=f"Bench other {n}", slug=f"bench-other-{n}") for n in range(OTHER_WORKSPACES)
        ]
        user_model = get_user_model()
        user = user_model.objects.filter(username=OPERATOR).first()
        if user is None:
            user = user_model.objects.create_user(OPERATOR, password=OPERATOR, is_staff=True, is_superuser=True)
        Membership.objects.create(user=user, workspace=main, role=Membership.Role.OWNER)
        prices = {p.model: p for p in Price.objects.all()}

    raw = connection.connection  # psycopg 3: COPY needs the driver's own cursor
    # Half the runs in the workspace under test; its share of events and requests follows the runs.
    run_workspace = [main.pk if n % 2 == 0 else workspaces[1 + n % OTHER_WORKSPACES].pk for n in range(runs)]
    run_created = sorted(now - datetime.timedelta(seconds=rng.uniform(0, DAYS * 86400)) for _ in range(runs))
    run_public = [ids.run_id() for _ in range(runs)]

    # Events per run: the big run gets exactly 500, the others share the rest unevenly around the mean.
    big_run = max(n for n in range(runs) if run_workspace[n] == main.pk)
    remaining = events - BIG_RUN_EVENTS
    weights = [rng.uniform(0.3, 1.7) if n != big_run else 0 for n in range(runs)]
    scale = remaining / sum(weights)
    event_counts = [max(2, int(w * scale)) if n != big_run else BIG_RUN_EVENTS for n, w in enumerate(weights)]
    # Put the rounding remainder on the first runs so the total is exact.
    short = events - sum(event_counts)
    for n in range(abs(short)):
        index = n % runs
        if index != big_run:
            event_counts[index] += 1 if short > 0 else (-1 if event_counts[index] > 2 else 0)
    request_counts = [requests // runs + (1 if n < requests % runs else 0) for n in range(runs)]

    with raw.cursor() as cursor:
        # sessions: one per two runs (follow-ups share them)
        bar = Progress(runs, "sessions + runs")
        session_ids: list[int] = []
        with cursor.copy(
            "COPY runs_session (public_id, workspace_id, output_schema, browser_state, created_at, updated_at) "
            "FROM STDIN"
        ) as copy:
            for n in range(0, runs, 2):
                ts = utc(run_created[n])
                copy.write_row((ids.session_id(), run_workspace[n], None, None, ts, ts))
        cursor.execute("SELECT id FROM runs_session ORDER BY id DESC LIMIT %s", [(runs + 1) // 2])
        session_ids = sorted(row[0] for row in cursor.fetchall())

        run_columns = (
            "public_id, workspace_id, session_id, created_by_id, task, start_url, model, scripted, max_turns, judge, "
            "judge_context, allowed_domains, allow_javascript, metadata, status, success, output, data, error_code, "
            "error_message, signals, usage_requests, usage_input, usage_output, usage_cache_read, usage_cache_write, "
            "cost_usd, last_seq, created_at, started_at, finished_at, worker"
        )
        extra_names, extra_values = field_defaults(Run, run_columns)
        with cursor.copy(f"COPY runs_run ({run_columns}{extra_names}) FROM STDIN") as copy:
            for n in range(runs):
                created = run_created[n]
                status = rng.choices(["succeeded", "failed", "cancelled", "running", "queued"], [70, 20, 5, 3, 2])[0]
                finished = status in ("succeeded", "failed", "cancelled")
                model = rng.choice(MODELS)
                reqs = request_counts[n]
                input_tokens = reqs * rng.randrange(300, 1500)
                cache_read = reqs * rng.randrange(2000, 9000)
                output_tokens = reqs * rng.randrange(40, 300)
                cache_write = reqs * rng.randrange(100, 800)
                cost = Decimal(input_tokens * 3 + output_tokens * 15 + cache_read * 0.3 + cache_write * 3.75) / 10**6
                copy.write_row(
                    (
                        run_public[n],
                        run_workspace[n],
                        session_ids[n // 2],
                        user.pk if run_workspace[n] == main.pk else None,
                        rng.choice(TASKS),
                        "http://shop.test/",
                        model,
                        False,
                        30,
                        rng.random() < 0.4,
                        "[]",
                        "[]",
                        False,
                        json.dumps({"bench": "500 events"} if n == big_run else {}),
                        status,
                        (status == "succeeded") if finished else None,
                        "Found it: £74.99 with free delivery." if status == "succeeded" else "",
                        json.dumps({"price": 74.99, "currency": "GBP"}) if status == "succeeded" else None,
                        "task_failed" if status == "failed" else ("cancelled" if status == "cancelled" else ""),
                        "The agent could not complete the task." if status == "failed" else "",
                        json.dumps({"turns": event_counts[n] // 4}),
                        reqs,
                        input_tokens,
                        output_tokens,
                        cache_read,
                        cache_write,
                        cost.quantize(Decimal("0.00000001")),
                        event_counts[n],
                        utc(created),
                        utc(created + datetime.timedelta(seconds=1)),
                        utc(created + datetime.timedelta(seconds=rng.uniform(20, 600))) if finished else None,
                        "bench@host",
                        *extra_values,
                    )
                )
                bar.advance()
        bar.close()
        cursor.execute("SELECT id FROM runs_run ORDER BY id DESC LIMIT %s", [runs])
        run_pks = sorted(row[0] for row in cursor.fetchall())
        raw.commit()

        bar = Progress(events, "events")
        written = 0
        with cursor.copy("COPY runs_event (public_id, run_id, seq, type, payload, processed_at) FROM STDIN") as copy:
            for n in range(runs):
                at = run_created[n]
                for seq, (kind, payload) in enumerate(event_payloads(rng, event_counts[n], run_public[n]), start=1):
                    at += datetime.timedelta(milliseconds=rng.randrange(50, 4000))
                    copy.write_row((fast_public_id(rng, "evt"), run_pks[n], seq, kind, json.dumps(payload), utc(at)))
                written += event_counts[n]
                if n % 50 == 0:
                    bar.advance(written - bar.done)
        bar.advance(written - bar.done)
        bar.close()
        raw.commit()

        bar = Progress(requests, "model requests")
        with cursor.copy(
            "COPY agent_platform_modelrequest (workspace_id, run_id, source, model, speed, input_tokens, output_tokens, "
            "cache_read_input_tokens, cache_creation_input_tokens, cost_usd, price_id, unpriced, created_at) FROM STDIN"
        ) as copy:
            for n in range(runs):
                model = rng.choice(MODELS)
                price = prices.get(model)
                for k in range(request_counts[n]):
                    source = "judge" if k == request_counts[n] - 1 and k > 0 and rng.random() < 0.4 else "agent"
                    tokens = (
                        rng.randrange(300, 1500),
                        rng.randrange(40, 300),
                        rng.randrange(2000, 9000),
                        rng.randrange(100, 800),
                    )
                    cost = Decimal(tokens[0] * 3 + tokens[1] * 15 + tokens[2] * 0.3 + tokens[3] * 3.75) / 10**6
                    copy.write_row(
                        (
                            run_workspace[n],
                            run_pks[n],
                            source,
                            model,
                            "standard",
                            *tokens,
                            cost.quantize(Decimal("0.00000001")),
                            price.pk if price else None,
                            price is None,
                            utc(run_created[n] + datetime.timedelta(seconds=k * 3)),
                        )
                    )
                    bar.advance()
        bar.close()
        raw.commit()
        # statistics and visibility map as autovacuum leaves them on a database that grew over months (without the
        # visibility map, PostgreSQL cannot use index-only scans and counts fall back to reading the table)
        raw.autocommit = True
        cursor.execute("VACUUM ANALYZE runs_session, runs_run, runs_event, agent_platform_modelrequest")
        raw.autocommit = False


def field_defaults(model: type[Model], known_columns: str) -> tuple[str, tuple]:
    """Columns of `model` that the COPY does not name but must fill (NOT NULL, no database default), with the
    field's default as COPY text, so a field added after this script was written does not break the seed."""
    from django.db import models

    known = {name.strip() for name in known_columns.split(",")}
    names, values = [], []
    for field in model._meta.concrete_fields:
        if field.column in known or field.primary_key or field.null or field.db_default is not models.NOT_PROVIDED:
            continue
        default = field.get_default()
        names.append(field.column)
        values.append(json.dumps(default) if isinstance(field, models.JSONField) else default)
    return "".join(f", {name}" for name in names), tuple(values)


def reset() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE runs_event, runs_run, runs_session, agent_platform_modelrequest, agent_platform_usageday "
            "RESTART IDENTITY CASCADE"
        )
        cursor.execute(
            "DELETE FROM agent_platform_membership WHERE workspace_id IN "
            "(SELECT id FROM agent_platform_workspace WHERE slug LIKE 'bench-%%')"
        )
        cursor.execute("DELETE FROM agent_platform_workspace WHERE slug LIKE 'bench-%%'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="the issue's size: 100k runs, 2M events, 1M requests")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--events", type=int)
    parser.add_argument("--requests", type=int)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--keep", action="store_true", help="do not truncate the tables first")
    args = parser.parse_args()
    factor = 1 if args.full else 10
    runs = args.runs or 100_000 // factor
    events = args.events or 2_000_000 // factor
    requests = args.requests or 1_000_000 // factor

    setup_django()
    from django.db import connection

    if connection.vendor != "postgresql":
        sys.exit("seed_scale needs PostgreSQL: set DATABASE_URL=postgres://...")
    print(header("Seed for the data-scale benchmark"))
    if not args.keep:
        reset()
    seed(runs, events, requests, args.seed)
    # COPY writes around ModelRequest.save: the billing view's daily rollup is summed from the requests once
    from agent_platform.reports import rebuild_usage_days

    print(f"usage rollup: {rebuild_usage_days():,} day rows", file=sys.stderr)
    with connection.cursor() as cursor:
        for table_name in ("runs_run", "runs_event", "agent_platform_modelrequest"):
            cursor.execute(f"SELECT count(*), pg_size_pretty(pg_total_relation_size('{table_name}')) FROM {table_name}")  # noqa: S608 - fixed names
            count, size = cursor.fetchone()
            print(f"{table_name:32} {count:>12,} rows {size:>10}")


if __name__ == "__main__":
    main()
