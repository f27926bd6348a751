"""Shared helpers of the benchmark scripts: progress bar, timing statistics, tables and the machine header."""

from __future__ import annotations

import datetime
import functools
import http.server
import os
import platform as stdlib_platform
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # the scripts run as `python bench/x.py`, so the repo root is not on sys.path by itself
    sys.path.insert(0, str(REPO))


def setup_django(settings_module: str = "agent_platform.settings") -> None:
    """Configure Django from the environment (DATABASE_URL, REDIS_URL) the way manage.py does."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", settings_module)
    import django

    django.setup()


class Progress:
    """A one-line progress bar on stderr; quiet when stderr is not a terminal except for a final line."""

    def __init__(self, total: int, label: str = "", width: int = 30) -> None:
        self.total = max(total, 1)
        self.label = label
        self.width = width
        self.done = 0
        self.started = time.perf_counter()
        self._last_draw = 0.0
        self._tty = sys.stderr.isatty()

    def advance(self, step: int = 1) -> None:
        self.done += step
        now = time.perf_counter()
        # redrawing on every step would cost more than the work being measured on tight loops
        if now - self._last_draw >= 0.1 or self.done >= self.total:
            self._last_draw = now
            self.draw()

    def draw(self) -> None:
        fraction = min(self.done / self.total, 1.0)
        filled = int(fraction * self.width)
        elapsed = time.perf_counter() - self.started
        eta = elapsed / fraction - elapsed if fraction > 0 else 0.0
        line = (
            f"\r{self.label:<24} [{'#' * filled}{'.' * (self.width - filled)}] "
            f"{self.done:>9,}/{self.total:,} {elapsed:6.1f}s eta {eta:5.0f}s"
        )
        if self._tty:
            sys.stderr.write(line)
            sys.stderr.flush()

    def close(self) -> None:
        elapsed = time.perf_counter() - self.started
        if self._tty:
            sys.stderr.write("\r" + " " * 100 + "\r")
        sys.stderr.write(f"{self.label}: {self.done:,} in {elapsed:.1f}s\n")
        sys.stderr.flush()


def progress(items: Iterable[T], total: int, label: str = "") -> Iterator[T]:
    """Yield `items` while drawing a progress bar of `total` steps."""
    bar = Progress(total, label)
    try:
        for item in items:
            yield item
            bar.advance()
    finally:
        bar.close()


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (fraction in 0..1) of `values`; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered) + 0.5) - 1))
    return ordered[rank]


def stats(values: Sequence[float]) -> dict[str, float]:
    """Median, p95, min, max and spread (p95 minus p5) of a sample, in the sample's unit."""
    if not values:
        nan = float("nan")
        return {"n": 0, "median": nan, "p95": nan, "min": nan, "max": nan, "spread": nan, "mean": nan}
    return {
        "n": len(values),
        "median": statistics.median(values),
        "p95": percentile(values, 0.95),
        "min": min(values),
        "max": max(values),
        "spread": percentile(values, 0.95) - percentile(values, 0.05),
        "mean": statistics.fmean(values),
    }


class Stopwatch:
    """`with Stopwatch() as sw: ...` then `sw.ms`."""

    def __enter__(self) -> Stopwatch:
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ms = (time.perf_counter() - self.started) * 1000


def fmt(value: Any, digits: int = 1) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], digits: int = 1) -> str:
    """A Markdown table (readable in a terminal and pasteable into docs/benchmarks.md)."""
    text_rows = [[fmt(cell, digits) for cell in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in text_rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=False)]
    numeric = [all(_looks_numeric(row[i]) for row in text_rows) if text_rows else False for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        padded = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=False))]
        return "| " + " | ".join(padded) + " |"

    separator = (
        "|" + "|".join(("-" * (w + 1) + ":") if numeric[i] else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    )
    return "\n".join([line(list(headers)), separator, *(line(r) for r in text_rows)])


def _looks_numeric(cell: str) -> bool:
    stripped = cell.replace(",", "").replace(".", "").replace("%", "").replace("-", "").strip()
    return stripped.isdigit() or cell == "n/a"


def git_commit() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return stdlib_platform.processor() or "unknown"


def memory_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def header(title: str) -> str:
    """The machine, date and commit line every result starts with."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"# {title}\n"
        f"machine: {os.cpu_count()} CPUs ({cpu_model()}), {memory_gib():.1f} GiB RAM, "
        f"Python {stdlib_platform.python_version()}, {stdlib_platform.system()} {stdlib_platform.release()}\n"
        f"date: {now}   commit: {git_commit()}   load average at start: {load_average()}\n"
    )


def load_average() -> str:
    """The 1/5/15-minute load averages: other work on the machine inflates every latency measured here."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def rss_kib(pid: int) -> int:
    """Resident set size of one process in KiB, from /proc (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kib(pid: int) -> int:
    """Proportional set size in KiB: shared pages split among the processes sharing them (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid: int) -> list[int]:
    """Every live descendant process of `pid` (children, grandchildren, …), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the ppid is the second field after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


class ConnectionPeak:
    """The most server connections named `application_name` (PGAPPNAME) PostgreSQL had at once, sampled from
    pg_stat_activity every `interval` seconds on a connection of the sampler's own; stays 0 on SQLite."""

    def __init__(self, application_name: str, interval: float = 0.1) -> None:
        self.application_name = application_name
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        import psycopg
        from django.db import connection

        params = {key: value for key, value in connection.get_connection_params().items() if key in LIBPQ_PARAMS}
        with psycopg.connect(**params, application_name=f"{self.application_name}-sampler", autocommit=True) as own:
            while not self._stop.is_set():
                row = own.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [self.application_name]
                ).fetchone()
                self.peak = max(self.peak, row[0] if row else 0)
                self._stop.wait(self.interval)

    def __enter__(self) -> ConnectionPeak:
        from django.db import connection

        if connection.vendor == "postgresql":
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


LIBPQ_PARAMS = {"dbname", "user", "password", "host", "port", "sslmode"}


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve `directory` on an ephemeral 127.0.0.1 port for the duration of the block (the fixture pages)."""
    handler = functools.partial(QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
