"""bench/turn_load.py, small, against the test database and Redis: every turn it drove is in the database once, each
run's events are gap-free, and every push to a watched run reached the receiver once. Not a timed test."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Count, Max, Min

from agent_platform.models import ModelRequest
from runs.models import Event, Run
from tests.support import factories
from tests.support.paths import REPO
from tests.support.workers import worker_environment

prices = factories.prices

RUNS = 24


def run_turn_load(tmp_path: Path) -> dict:
    """One small load test (its runs kept, so the database can be read after it); its JSON report."""
    report = tmp_path / "turn_load.json"
    media = tmp_path / "media"
    command = [
        sys.executable, "bench/turn_load.py", "--runs", str(RUNS), "--workspaces", "3", "--interval", "2",
        "--duration", "3", "--saturate", "1.5", "--processes", "2", "--lanes", "3", "--sample-every", "3",
        "--quiet-seconds", "0.5", "--keep", "--json", str(report),
    ]  # fmt: skip
    done = subprocess.run(
        command,
        cwd=REPO,
        env=worker_environment({"MEDIA_ROOT": str(media), "DB_POOL_MAX": "2"}),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "checks:" in done.stdout and "ok" in done.stdout.rsplit("checks:", 1)[1]
    return {**json.loads(report.read_text()), "media": media}


@pytest.mark.slow
def test_a_small_turn_load_records_every_turn_once_and_delivers_every_push_once(tmp_path, prices):
    turn_load = run_turn_load(tmp_path)
    every_turn_is_recorded_once_with_gap_free_events(turn_load)
    each_turn_carries_its_live_view_image_in_storage(turn_load)
    every_push_to_a_watched_run_arrived_once(turn_load)
    the_report_has_the_costs_of_a_turn(turn_load)
    the_drivers_connections_stay_within_their_pools(turn_load)


def the_drivers_connections_stay_within_their_pools(turn_load):
    """Three lanes and a heartbeat lane in each of the two drivers share a pool of two (PostgreSQL only)."""
    connections = turn_load["connections"]
    if connection.vendor == "postgresql":
        assert 0 < connections["peak"] <= connections["bound"] == 2 * 2
    else:
        assert connections == {"peak": 0, "bound": None}


def every_turn_is_recorded_once_with_gap_free_events(turn_load):
    runs = Run.objects.filter(public_id__in=turn_load["runs"])
    assert runs.count() == RUNS
    turns = turn_load["checks"]["turns"]
    # each run had its warm-up turn and more in the two phases
    assert turns >= 2 * RUNS
    assert ModelRequest.objects.filter(run__in=runs).count() == turns
    assert runs.aggregate(total=Count("model_requests"))["total"] == turns
    # agent.usage, agent.message, agent.tool_use and agent.tool_result per turn
    assert Event.objects.filter(run__in=runs).count() == 4 * turns == turn_load["checks"]["events"]
    shapes = (
        Event.objects.filter(run__in=runs).values("run_id").annotate(n=Count("id"), low=Min("seq"), high=Max("seq"))
    )
    last_seq = dict(runs.values_list("pk", "last_seq"))
    assert len(shapes) == RUNS
    for shape in shapes:
        assert (shape["low"], shape["high"]) == (1, shape["n"]) == (1, last_seq[shape["run_id"]])
    for run in runs:
        assert run.usage_requests == run.model_requests.count()
        assert run.signals["turns"] == run.usage_requests


def each_turn_carries_its_live_view_image_in_storage(turn_load):
    results = Event.objects.filter(run__public_id__in=turn_load["runs"], type="agent.tool_result")
    urls = [event.payload["screenshot_url"] for event in results]
    assert urls and all(urls)
    kept = list((turn_load["media"] / "screenshots").rglob("*.jpg"))
    assert len(kept) == len(urls)


def every_push_to_a_watched_run_arrived_once(turn_load):
    watched = turn_load["watched"]
    assert len(watched) == RUNS // 3
    checks = turn_load["checks"]
    expected = Event.objects.filter(run__public_id__in=watched).count()
    assert checks["pushes_expected"] == expected > 0
    assert checks["pushes_received"] == expected
    assert checks["duplicate_pushes"] == 0
    assert checks["problems"] == []


def the_report_has_the_costs_of_a_turn(turn_load):
    for name in ("steady", "saturate"):
        phase = turn_load["phases"][name]
        assert phase["turns"] > 0
        assert phase["pushes_delivered"] == phase["pushes_stamped"] > 0
        per_turn = phase["per_turn"]
        assert per_turn["Redis commands"] > 0
        assert per_turn["worker CPU ms (drivers)"] > 0
        if connection.vendor == "postgresql":  # its counters; SQLite has no server to ask
            # the turn's transaction (the lane's heartbeat and the checkpoint are in it) at least; four events, the
            # model request and the checkpoint (give or take what a backend had not reported when the window closed)
            assert per_turn["PostgreSQL commits"] > 0.5
            assert per_turn["PostgreSQL rows inserted"] >= 5
            assert per_turn["PostgreSQL CPU ms, our backends"] > 0
