"""Live latency: from an event's commit to its appearance in the run page open in a real Chromium, p50 and p95.

Daphne serves the real ASGI application (views, static files, the run's websocket consumer, channels_redis on
REDIS_URL). A signed-in Chromium page opens a running run; this process then emits events with runs.events.emit, the
worker's own path (commit, then push to the run's group), at a steady rate from a separate thread. The commit instant
is taken where emit hands the committed event to `push` (a wrapper installed in this process only); the appearance
instant is taken in the page by a MutationObserver when the event's `[data-seq]` node enters #timeline. Both are wall
clock milliseconds; the page's clock offset is calibrated first (best of 30 round trips). Target: p95 under 50 ms.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/live_latency.py [--events 1000] [--rate 50]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from _common import REPO, Progress, header, stats, table

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from runs.models import Event, Run

TARGET_P95_MS = 50.0

OBSERVER = """
() => {
  window.__seen = {};
  const timeline = document.getElementById("timeline");
  const note = (node) => {
    if (node.nodeType !== 1) return;
    const now = performance.timeOrigin + performance.now();
    const nodes = node.matches("[data-seq]") ? [node] : Array.from(node.querySelectorAll("[data-seq]"));
    for (const n of nodes) { const seq = Number(n.dataset.seq); if (!(seq in window.__seen)) window.__seen[seq] = now; }
  };
  new MutationObserver((mutations) => { for (const m of mutations) m.addedNodes.forEach(note); })
    .observe(timeline, { childList: true, subtree: true });
  return true;
}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_daphne(log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver"}
    log = open(log_path, "ab")  # noqa: SIM115 - kept open for the server's lifetime
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"daphne exited:\n{log_path.read_text()[-2000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process, f"http://127.0.0.1:{port}"
        time.sleep(0.2)
    process.terminate()
    raise SystemExit("daphne did not start within 30 s")


def clock_offset_ms(page: Page) -> tuple[float, float]:
    """The page clock minus this process's clock, from the round trip with the smallest delay, and that delay."""
    best = (0.0, float("inf"))
    for _ in range(30):
        before = time.time() * 1000
        browser_now = page.evaluate("() => performance.timeOrigin + performance.now()")
        after = time.time() * 1000
        if after - before < best[1]:
            best = (browser_now - (before + after) / 2, after - before)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=50.0, help="events per second")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()

    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
    from _common import setup_django

    setup_django()
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from playwright.sync_api import sync_playwright

    from agent_platform.models import Membership, Workspace
    from runs import events
    from runs.models import Run, Session

    print(header("Live latency"))
    user_model = get_user_model()
    operator = user_model.objects.filter(username="bench").first() or user_model.objects.create_user(
        "bench", password="bench"
    )
    workspace, _ = Workspace.objects.get_or_create(slug="bench-live", defaults={"name": "Bench live"})
    Membership.objects.get_or_create(user=operator, workspace=workspace, defaults={"role": Membership.Role.OWNER})
    run = Run.objects.create(
        workspace=workspace,
        session=Session.objects.create(workspace=workspace),
        task="Live latency benchmark",
        model="claude-sonnet-4-6",
        status=Run.Status.RUNNING,
        max_turns=10_000,
    )
    client = Client()
    client.force_login(operator)
    cookie = client.cookies["sessionid"].value

    committed: dict[int, float] = {}
    original_push = events.push

    def timed_push(run: Run, event: Event) -> None:
        # called by emit right after its transaction committed: the commit instant
        committed[event.seq] = time.time() * 1000
        original_push(run, event)

    events.push = timed_push
    log_path = REPO / "var" / "bench-daphne.log"
    log_path.parent.mkdir(exist_ok=True)
    daphne, base = start_daphne(log_path)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=args.chromium,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
            )
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": cookie, "url": base}])
            page = context.new_page()
            page.goto(f"{base}/runs/{run.public_id}/", wait_until="load")
            page.evaluate(OBSERVER)
            page.wait_for_timeout(1000)  # let the socket connect and subscribe before the first event
            offset, delay = clock_offset_ms(page)

            def emit_all() -> None:
                try:
                    interval = 1 / args.rate
                    next_at = time.perf_counter()
                    for number in range(args.events):
                        events.emit(run, "agent.message", {"text": f"Benchmark event {number}", "turn": number + 1})
                        next_at += interval
                        time.sleep(max(0.0, next_at - time.perf_counter()))
                finally:
                    connection.close()

            bar = Progress(args.events, "events")
            with ThreadPoolExecutor(max_workers=1) as pool:
                # emit runs on its own thread: this one holds Playwright's loop, where the live push cannot run
                done = pool.submit(emit_all)
                while not done.done():
                    page.wait_for_timeout(250)
                    bar.advance(len(committed) - bar.done)
                done.result()
            deadline = time.monotonic() + 10
            seen: dict[str, float] = {}
            while time.monotonic() < deadline:
                seen = page.evaluate("() => window.__seen")
                if len(seen) >= len(committed):
                    break
                page.wait_for_timeout(200)
            bar.close()
            browser.close()
    finally:
        events.push = original_push
        daphne.terminate()
        daphne.wait(20)

    latencies = [seen[str(seq)] - offset - at for seq, at in committed.items() if str(seq) in seen]
    missing = len(committed) - len(latencies)
    summary = stats(latencies)
    print(
        f"{len(committed):,} events at {args.rate:g}/s; page clock offset {offset:+.2f} ms (round trip {delay:.1f} ms)\n"
    )
    print(
        table(
            ["events shown", "missing", "p50 ms", "p95 ms", "p99 ms", "min ms", "max ms"],
            [
                [
                    len(latencies),
                    missing,
                    summary["median"],
                    summary["p95"],
                    sorted(latencies)[int(len(latencies) * 0.99) - 1] if latencies else float("nan"),
                    summary["min"],
                    summary["max"],
                ]
            ],
            digits=2,
        )
    )
    verdict = "met" if summary["p95"] < TARGET_P95_MS and not missing else "MISSED"
    print(f"\ncommit to DOM p95: {summary['p95']:.1f} ms (target < {TARGET_P95_MS:.0f} ms, none missing: {verdict})")


if __name__ == "__main__":
    main()
