"""Density: 1, 10, 20, 40 and 80 concurrent runs on one worker process with one Chromium; turns per second, memory
and database connections.

Runs execute on threads of this process, as the Celery worker's thread pool runs them, sharing the process's one
BrowserHost (one BrowserContext per run), against a scripted Messages stub that answers at once and the fixture
pages. Memory is the resident set (VmRSS from /proc) of this process plus its Playwright driver and Chromium
processes, sampled every 200 ms, both as RSS (which counts pages shared between Chromium's processes once per
process) and as PSS (shared pages split among their sharers: the honest sum); "per added run" is the peak's growth
over the one-run level divided by the runs added, judged on PSS. Targets: under 60 MB per added run, no errors.

On PostgreSQL the peak of this process's server connections (pg_stat_activity, by its application_name, sampled
every 100 ms) is reported beside the pool's bound (DB_POOL_MAX): it must stay within it whatever the level.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/density.py [--levels 1,10,20,40,80] [--turns 10]
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import _runtime
from _common import ConnectionPeak, descendants, header, load_average, progress, pss_kib, rss_kib, table

TARGET_MB_PER_RUN = 60.0
APPLICATION_NAME = "pilothouse-density"  # this process's connections in pg_stat_activity (libpq reads PGAPPNAME)


class MemorySampler:
    """Peak resident memory of this process and its descendants (except the stub's), sampled in the background."""

    def __init__(self, exclude: set[int], interval: float = 0.2) -> None:
        self.exclude = exclude
        self.interval = interval
        self.peak_kib = 0
        self.peak_pss_kib = 0
        self.peak_by_kind: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def pids(self) -> list[int]:
        return [os.getpid(), *(pid for pid in descendants(os.getpid()) if pid not in self.exclude)]

    def current_kib(self) -> int:
        return sum(rss_kib(pid) for pid in self.pids())

    def current_pss_kib(self) -> int:
        return sum(pss_kib(pid) for pid in self.pids())

    def _sample(self) -> None:
        while not self._stop.is_set():
            pids = self.pids()
            self.peak_kib = max(self.peak_kib, sum(rss_kib(pid) for pid in pids))
            by_kind: dict[str, int] = {}
            for pid in pids:
                kind = process_kind(pid)
                by_kind[kind] = by_kind.get(kind, 0) + pss_kib(pid)
            total = sum(by_kind.values())
            if total > self.peak_pss_kib:
                self.peak_pss_kib, self.peak_by_kind = total, by_kind
            self._stop.wait(self.interval)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_level(site: str, concurrency: int, turns: int, stub_pid: int) -> dict:
    from django.db import connection

    from agent_platform.models import ModelRequest
    from runs.models import Run

    runs = [_runtime.new_run(site, max_turns=turns + 5) for _ in range(concurrency)]
    errors: list[str] = []

    def execute(run: Run) -> None:
        try:
            _runtime.execute(run)
        except Exception as error:  # a crash in one run must not hide the others' numbers
            errors.append(f"{run.public_id}: {type(error).__name__}: {error}")
        finally:
            connection.close()

    threads = [threading.Thread(target=execute, args=(run,)) for run in runs]
    with MemorySampler(exclude={stub_pid}) as sampler, ConnectionPeak(APPLICATION_NAME) as connections:
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
    statuses: dict[str, int] = {}
    for run in runs:
        run.refresh_from_db()
        statuses[run.status] = statuses.get(run.status, 0) + 1
        if run.status != "succeeded":
            errors.append(f"{run.public_id}: {run.status} {run.error_code} {run.error_message[:120]}")
    model_turns = ModelRequest.objects.filter(run__in=runs).count()
    return {
        "concurrency": concurrency,
        "elapsed": elapsed,
        "turns": model_turns,
        "turns_per_second": model_turns / elapsed,
        "peak_mib": sampler.peak_kib / 1024,
        "peak_pss_mib": sampler.peak_pss_kib / 1024,
        "by_kind": {kind: kib / 1024 for kind, kib in sampler.peak_by_kind.items()},
        "errors": errors,
        "statuses": statuses,
        "peak_connections": connections.peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--levels", default="1,10,20,40,80")
    parser.add_argument("--turns", type=int, default=10, help="model turns per run (the last one calls done)")
    args = parser.parse_args()
    levels = [int(level) for level in args.levels.split(",")]

    os.environ["PGAPPNAME"] = APPLICATION_NAME
    print(header("Density"))
    results = []
    with _runtime.fixture_site() as site, _runtime.stub_process(site, args.turns, with_usage=True) as base_url:
        _runtime.configure(base_url)
        stub_pid = next(pid for pid in descendants(os.getpid()) if b"_runtime.py" in _cmdline(pid))
        # warm up: Chromium launched, imports and connections made, so level 1 is the baseline of a working worker
        _runtime.execute(_runtime.new_run(site, max_turns=args.turns + 5))
        idle = MemorySampler(exclude={stub_pid})
        idle_mib, idle_pss_mib = idle.current_kib() / 1024, idle.current_pss_kib() / 1024
        for concurrency in progress(levels, len(levels), "levels"):
            results.append(run_level(site, concurrency, args.turns, stub_pid))

    base = results[0]
    rows = []
    for result in results:
        added = result["concurrency"] - base["concurrency"]
        per_run = (result["peak_mib"] - base["peak_mib"]) / added if added else float("nan")
        per_run_pss = (result["peak_pss_mib"] - base["peak_pss_mib"]) / added if added else float("nan")
        rows.append(
            [
                result["concurrency"],
                result["turns"],
                result["elapsed"],
                result["turns_per_second"],
                result["peak_mib"],
                per_run,
                result["peak_pss_mib"],
                per_run_pss,
                result["peak_connections"],
                len(result["errors"]),
            ]
        )
    print(
        f"worker idle after one run (process + Playwright driver + Chromium): {idle_mib:.0f} MiB RSS, "
        f"{idle_pss_mib:.0f} MiB PSS\n"
    )
    print(
        table(
            [
                "concurrent runs",
                "model turns",
                "wall s",
                "turns/s",
                "peak RSS MiB",
                "RSS MiB/added run",
                "peak PSS MiB",
                "PSS MiB/added run",
                "peak DB connections",
                "errors",
            ],
            rows,
        )
    )
    print(f"\ndatabase connections: {pool_bound()}   load average at end: {load_average()}")
    kinds = sorted({kind for result in results for kind in result["by_kind"]})
    print("\nPSS at the peak by process kind (MiB):\n")
    print(
        table(
            ["concurrent runs", *kinds],
            [[result["concurrency"], *(result["by_kind"].get(kind, 0.0) for kind in kinds)] for result in results],
        )
    )
    for result in results:
        for error in result["errors"][:5]:
            print(f"  {result['concurrency']} concurrent: {error}")
    top = results[-1]
    added = top["concurrency"] - base["concurrency"]
    per_run = (top["peak_pss_mib"] - base["peak_pss_mib"]) / added if added else float("nan")
    verdict = "met" if per_run < TARGET_MB_PER_RUN and not top["errors"] else "MISSED"
    print(
        f"\n{top['concurrency']} concurrent runs: {per_run:.1f} MiB (PSS) per added run, {len(top['errors'])} errors "
        f"(target < {TARGET_MB_PER_RUN:.0f} MB per added run, no errors: {verdict})"
    )
    bound = pool_size()
    if bound:
        peak = max(result["peak_connections"] for result in results)
        print(f"peak server connections {peak} at most the pool's {bound}: {'met' if peak <= bound else 'MISSED'}")


def pool_size() -> int:
    """The pool's bound on this process's connections; 0 without a pool."""
    from django.db import connection

    pool = connection.settings_dict.get("OPTIONS", {}).get("pool") if connection.vendor == "postgresql" else None
    return int(pool["max_size"]) if isinstance(pool, dict) else 0


def pool_bound() -> str:
    """What bounds this process's database connections: the pool's size, or nothing (SQLite, or the pool off)."""
    from django.conf import settings
    from django.db import connection

    if connection.vendor != "postgresql":
        return f"{connection.vendor}: no pool, a connection per thread (not counted)"
    pool = connection.settings_dict.get("OPTIONS", {}).get("pool")
    if not pool:
        return "PostgreSQL without a pool (DB_POOL_MAX=0): a connection per thread"
    return f"PostgreSQL pool of at most {settings.DB_POOL_MAX} (DB_POOL_MAX) for this process"


def process_kind(pid: int) -> str:
    """python (this process), playwright driver, or chromium by its --type (renderer, gpu, utility, browser)."""
    if pid == os.getpid():
        return "python (loop)"
    # Chromium rewrites its argv into one space-separated string; other processes keep NUL separators
    command = _cmdline(pid).replace(b"\0", b" ").split()
    if any(b"playwright" in part and b"node" in part for part in command[:1]):
        return "playwright driver"
    for part in command:
        if part.startswith(b"--type="):
            return "chromium " + part[7:].decode(errors="replace")
    return "chromium browser" if command and b"chrom" in command[0] else "other"


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except OSError:
        return b""


if __name__ == "__main__":
    main()
