"""`make test`'s suites at once: the PostgreSQL run (with coverage) and the SQLite run as two pytest processes, so CI
takes the longer of the two rather than their sum.

Each run has a Redis database of its own (REDIS_URL's, and the next number for SQLite), so neither's broker flush
or Celery queues reach the other; each writes its output to a log under var/ that is printed whole when it ends,
its pytest summary line last. Exits non-zero if either run failed.

Usage: parallel_suites.py SQLITE_DATABASE_URL [pytest options...]  (DATABASE_URL and REDIS_URL from the environment)
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "var"
# A suite still running after this long is stopped and counted as failed: a test that hangs (an event loop waiting on
# a task that never ends) must fail the build, with its log, well inside CI's own limit rather than run into it.
# Each log ends with its slowest tests, so a test that grows slow is seen (and marked `slow`) before CI's limit nears.
DURATIONS = ["--durations=15"]
SUITE_TIME_LIMIT_SECONDS = int(os.environ.get("TEST_SUITE_TIME_LIMIT_SECONDS", str(70 * 60)))


def next_redis_database(url: str) -> str:
    """The same Redis with the next database number: redis://host:6379/9 -> /10; a URL without one -> /1."""
    if url.startswith("unix://"):
        match = re.search(r"[?&]db=(\d+)", url)
        if match:
            return f"{url[: match.start(1)]}{int(match.group(1)) + 1}{url[match.end(1) :]}"
        return f"{url}{'&' if '?' in url else '?'}db=1"
    match = re.search(r"/(\d+)$", url)
    if match:
        return f"{url[: match.start()]}/{int(match.group(1)) + 1}"
    return f"{url.rstrip('/')}/1"


def main() -> int:
    sqlite_url, pytest_args = sys.argv[1], sys.argv[2:]
    redis_url = os.environ["REDIS_URL"]
    python = sys.executable
    LOGS.mkdir(exist_ok=True)
    suites = {
        "PostgreSQL": (
            [python, "-m", "pytest", "--cov", "--cov-report=term", *DURATIONS, *pytest_args],
            {"REDIS_URL": redis_url},
        ),
        "SQLite": (
            # its own pytest cache, so the two runs never write one file at once
            [python, "-m", "pytest", "-o", "cache_dir=.pytest_cache/sqlite", *DURATIONS, *pytest_args],
            {"DATABASE_URL": sqlite_url, "REDIS_URL": next_redis_database(redis_url)},
        ),
    }
    running = {}
    for name, (args, extra) in suites.items():
        log_path = LOGS / f"test-{name.lower()}.log"
        log = open(log_path, "wb")  # noqa: SIM115  (closed when the run ends, below)
        print(f"[make test] {name} suite started (REDIS_URL={extra['REDIS_URL']}), output in {log_path}", flush=True)
        process = subprocess.Popen(
            args, cwd=REPO, env={**os.environ, **extra}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        running[name] = (process, log, log_path, time.monotonic())
    failed: list[str] = []
    try:
        watch(running, failed)
    except KeyboardInterrupt:  # the suites run in sessions of their own: Ctrl-C reaches only this process
        for process, *_ in running.values():
            os.killpg(process.pid, signal.SIGKILL)
        raise
    if failed:
        print(f"[make test] failed: {', '.join(failed)} suite", flush=True)
        return 1
    return 0


def watch(running: dict, failed: list[str]) -> None:
    """Print each suite's log as it ends, and note the ones that failed (or ran past the time limit)."""
    while running:
        for name, (process, log, log_path, started) in list(running.items()):
            if process.poll() is None:
                if time.monotonic() - started < SUITE_TIME_LIMIT_SECONDS:
                    continue
                print(f"[make test] {name} suite still running after {SUITE_TIME_LIMIT_SECONDS} s: stopped", flush=True)
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            log.close()
            del running[name]
            print(
                f"\n========== {name} suite (exit {process.returncode}, {time.monotonic() - started:.0f} s) =========="
            )
            sys.stdout.write(log_path.read_text(errors="replace"))
            sys.stdout.flush()
            if process.returncode != 0:
                failed.append(name)
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
