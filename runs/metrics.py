"""What the database knows of runs, as Prometheus families read at scrape time (agent_platform.metrics caches them)."""

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .models import Run
from .queueing import IN_FLIGHT, in_flight_counts


def run_families() -> Iterator[Metric]:
    """Runs launched, finished by status and error code, queued and running now: one grouped query over runs."""
    launched = CounterMetricFamily("pilothouse_runs_launched", "Runs launched (every run row).")
    finished = CounterMetricFamily(
        "pilothouse_runs_finished", "Runs that ended, by status and error code.", labels=["status", "error_code"]
    )
    now = {
        Run.Status.QUEUED: GaugeMetricFamily("pilothouse_runs_queued", "Runs waiting for a worker now."),
        Run.Status.RUNNING: GaugeMetricFamily("pilothouse_runs_running", "Runs a worker is executing now."),
    }
    counts: dict[str, int] = dict.fromkeys(now, 0)
    total = 0
    for row in Run.objects.order_by().values("status", "error_code").annotate(count=Count("id")):
        total += row["count"]
        if row["status"] in Run.TERMINAL:
            finished.add_metric([row["status"], row["error_code"]], row["count"])
        elif row["status"] in counts:
            counts[row["status"]] += row["count"]
    launched.add_metric([], total)
    for status, family in now.items():
        family.add_metric([], counts[status])
    yield from (launched, finished, *now.values())


def workspace_queue_families() -> Iterator[Metric]:
    """Each workspace's runs in flight by state (runs.queueing): running, queued for a worker slot, or waiting behind
    its concurrency limit; one grouped query over the active runs."""
    family = GaugeMetricFamily(
        "pilothouse_workspace_runs",
        "A workspace's active runs: running, queued (handed to the workers) or waiting (behind its concurrency limit).",
        labels=["workspace", "state"],
    )
    rows = (
        Run.objects.active()
        .order_by()
        .values("workspace__slug")
        .annotate(**in_flight_counts())
        .values_list("workspace__slug", *IN_FLIGHT)
    )
    for slug, *counts in rows:
        for state, count in zip(IN_FLIGHT, counts, strict=True):
            family.add_metric([slug, state], count)
    yield family
