"""Harness overhead per agent turn: the real runtime against a Messages stub that answers at once and local pages.

Each turn (from one model request to the next) is split by timing wrappers installed in this process only (the
runtime has no timing code): the model client (SDK client, HTTP round trip to the stub), browser actions, reads
(read_page, find, get_page_text), the page fingerprint and the viewport screenshot the loop takes after each action,
persistence (event, usage and run-row writes in PostgreSQL), the push to the Channels layer (Redis), and the rest of
the loop. Target: p50 under 40 ms per turn excluding the screenshot. The checkpoint another worker would continue the
run from (runtime.checkpoint) is timed on its own: taken on the loop's thread, written on the run's lane.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/turn_overhead.py [--runs 3] [--turns 30]
"""

from __future__ import annotations

import argparse
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import _runtime
from _common import header, progress, stats, table

TARGET_P50_MS = 40.0
READS = {"read_page", "find", "get_page_text"}
CATEGORIES = [
    "model client",
    "browser action",
    "read (read_page/find/text)",
    "fingerprint",
    "screenshot",
    "persistence",
    "push",
    "loop (rest)",
]


class TurnProfiler:
    """Exclusive time per category per turn, on the thread running the loop (nested wrapped calls are subtracted)."""

    def __init__(self) -> None:
        self.turns: list[dict[str, float]] = []
        self.current: dict[str, float] | None = None
        self.turn_started = 0.0
        self.stack: list[float] = []
        self.async_screenshot_ms = 0.0
        self.thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start_turn(self) -> None:
        now = time.perf_counter()
        self.close_turn(now)
        self.current = defaultdict(float)
        self.turn_started = now

    def close_turn(self, now: float) -> None:
        if self.current is not None:
            self.current["total"] = (now - self.turn_started) * 1000
            self.turns.append(dict(self.current))
        self.current = None

    def add(self, category: str, ms: float) -> None:
        if self.current is not None:
            self.current[category] += ms

    def wrap(self, function: Callable, category: str | Callable[..., str], *, starts_turn: bool = False) -> Callable:
        profiler = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not profiler.thread:
                return function(*args, **kwargs)
            if starts_turn:
                profiler.start_turn()
            name = category(*args, **kwargs) if callable(category) else category
            shots_before = profiler.async_screenshot_ms
            started = time.perf_counter()
            profiler.stack.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = (time.perf_counter() - started) * 1000
                nested = profiler.stack.pop()
                if profiler.stack:
                    profiler.stack[-1] += elapsed
                # a screenshot taken on the browser loop during this call is the screenshot's, not this category's
                shots = profiler.async_screenshot_ms - shots_before
                profiler.add("screenshot", shots)
                profiler.add(name, max(0.0, elapsed - nested - shots))

        return timed


def install(profiler: TurnProfiler) -> None:
    """Wrap the runtime's calls in this process (never in the repo's code)."""
    from playwright.async_api import Page

    from runs import events, lifecycle, usage
    from runtime import loop, record, run_browser

    def wrap_in_place(
        owner: object, name: str, category: str | Callable[..., str], *, starts_turn: bool = False
    ) -> None:
        # the names the loop looks up at call time (its module globals, the class's methods) are replaced in place
        setattr(owner, name, profiler.wrap(getattr(owner, name), category, starts_turn=starts_turn))

    wrap_in_place(loop, "send_message", "model client", starts_turn=True)
    wrap_in_place(usage, "record_model_request", "persistence")
    wrap_in_place(record, "record_turn", "persistence")
    wrap_in_place(usage, "emit", "persistence")
    wrap_in_place(events, "push", "push")
    wrap_in_place(run_browser, "save_screenshot", "screenshot")
    for name in ("heartbeat", "cancel_requested"):
        wrap_in_place(lifecycle, name, "persistence")
    wrap_in_place(
        loop.AgentLoop,
        "browse",
        lambda self, use: "read (read_page/find/text)" if use.name in READS else "browser action",
    )
    wrap_in_place(run_browser.RunBrowser, "fingerprint", "fingerprint")

    original_screenshot = Page.screenshot

    async def screenshot(self: Page, *args: Any, **kwargs: Any) -> bytes:
        started = time.perf_counter()
        try:
            return await original_screenshot(self, *args, **kwargs)
        finally:
            with profiler._lock:
                profiler.async_screenshot_ms += (time.perf_counter() - started) * 1000

    Page.screenshot = screenshot  # type: ignore[method-assign]  # timed in place, for this process only


class CheckpointTimer:
    """Milliseconds spent on checkpoints, on whichever thread: taking them (the loop's) and writing them (the lane's,
    inside the turn record's transaction), with the bytes of conversation each row holds."""

    def __init__(self) -> None:
        self.took: list[float] = []
        self.wrote: list[float] = []
        self.sizes: list[int] = []

    def install(self) -> None:
        from runtime import checkpoint, loop

        take, write = loop.AgentLoop.take_checkpoint, checkpoint.write
        timer = self

        def timed_take(agent_loop: Any) -> Any:
            started = time.perf_counter()
            taken = take(agent_loop)
            timer.took.append((time.perf_counter() - started) * 1000)
            timer.sizes.append(len(taken.messages))
            return taken

        def timed_write(*args: Any, **kwargs: Any) -> None:
            started = time.perf_counter()
            write(*args, **kwargs)
            timer.wrote.append((time.perf_counter() - started) * 1000)

        loop.AgentLoop.take_checkpoint = timed_take  # type: ignore[method-assign,assignment]  # timed in place, this process only
        checkpoint.write = timed_write


def reuse_one_client() -> None:
    """Build the Anthropic client once: each construction loads the CA bundle into a new SSL context."""
    import functools

    from agent_platform import llm

    llm.client = functools.cache(llm.client)  # the what-if, in this process only


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--turns", type=int, default=30, help="model turns per run (the last one calls done)")
    parser.add_argument(
        "--reuse-client",
        action="store_true",
        help="what-if: one Anthropic client per process instead of one per request (patched here, not in the repo)",
    )
    args = parser.parse_args()

    print(header("Turn overhead"))
    profiler = TurnProfiler()
    per_run_p50: list[float] = []
    with _runtime.fixture_site() as site, _runtime.stub_process(site, args.turns, with_usage=True) as base_url:
        _runtime.configure(base_url)
        install(profiler)
        checkpoints = CheckpointTimer()
        checkpoints.install()
        if args.reuse_client:
            reuse_one_client()
        profiler.thread = threading.current_thread()
        # a first run warms Chromium, the connections and the imports; it is not counted
        _runtime.execute(_runtime.new_run(site, max_turns=args.turns + 5))
        profiler.turns.clear()
        checkpoints.__init__()  # type: ignore[misc]  # the warm-up run's are not counted
        for _ in progress(range(args.runs), args.runs, "runs"):
            first = len(profiler.turns)
            run = _runtime.new_run(site, max_turns=args.turns + 5)
            profiler.current = None
            _runtime.execute(run)
            # the last turn holds the run's ending (final view, context close): not a turn's overhead
            profiler.current = None
            run.refresh_from_db()
            if run.status != "succeeded":
                raise SystemExit(f"run {run.public_id} ended {run.status}: {run.error_code} {run.error_message}")
            totals = [t["total"] - t.get("screenshot", 0.0) for t in profiler.turns[first:]]
            per_run_p50.append(stats(totals)["median"])

    turns = profiler.turns
    for turn in turns:
        turn["loop (rest)"] = max(0.0, turn["total"] - sum(turn.get(c, 0.0) for c in CATEGORIES[:-1]))
        turn["total excl. screenshot"] = turn["total"] - turn.get("screenshot", 0.0)
    mean_total = stats([t["total"] for t in turns])["mean"]
    rows = []
    for category in [*CATEGORIES, "total", "total excl. screenshot"]:
        values = [turn.get(category, 0.0) for turn in turns]
        summary = stats(values)
        share = summary["mean"] / mean_total if category in CATEGORIES else 1.0
        rows.append([category, summary["median"], summary["p95"], summary["mean"], f"{share:.0%}"])
    client = "one Anthropic client per process (what-if)" if args.reuse_client else "the runtime as committed"
    print(f"{len(turns)} turns over {args.runs} runs of {args.turns} model turns; {client}\n")
    print(table(["per turn", "p50 ms", "p95 ms", "mean ms", "share of mean"], rows))
    p50 = stats([t["total excl. screenshot"] for t in turns])["median"]
    spread = f"{min(per_run_p50):.1f}-{max(per_run_p50):.1f}" if per_run_p50 else "n/a"
    verdict = "met" if p50 < TARGET_P50_MS else "MISSED"
    print(
        f"\np50 per turn excluding the screenshot: {p50:.1f} ms (per-run p50s {spread} ms); "
        f"target < {TARGET_P50_MS:.0f} ms: {verdict}"
    )
    took, wrote, sizes = stats(checkpoints.took), stats(checkpoints.wrote), stats([float(n) for n in checkpoints.sizes])
    print(
        f"checkpoints: {len(checkpoints.took)} taken, p50 {took['median']:.2f} ms (p95 {took['p95']:.2f}) on the loop's "
        f"thread; written p50 {wrote['median']:.2f} ms (p95 {wrote['p95']:.2f}) on the lane, in the turn's "
        f"transaction; {sizes['median']:.0f} bytes of conversation per row (p50)"
    )


if __name__ == "__main__":
    main()
