"""A step at the browser's own speed: the same walk by Pilothouse's runtime (model answering at once) and by bare
Playwright, per step median and p95, their ratio, and the first step of a warm worker against the others.

The walk, on a shop page of 32 controls served here: scroll, click a button that changes the page without
navigating, click a link to a product page, navigate back to the shop by URL; again and again. Each Pilothouse
step is one model turn with two tool calls, the action then read_page, from one model request to the next (the
Messages stub runs in this process and answers at once: everything else of the turn is the runtime's). Each bare
step is the same action through Playwright, an aria snapshot like read_page's and a viewport PNG screenshot (what
an agent built on bare Playwright would hand its model; Pilothouse's live-view screenshot is not the model's).
Both use the same Chromium, alternately, run after run. The first step of a warm worker is measured in fresh
processes that warm up as a worker does at start (`runtime.worker.warm_up`), then execute one run; `--cold`
processes skip the warm-up, for comparison. Python CPU per step is this process's CPU time over the counted walks
(every thread: the loop, its lane, the browser host's loop), less what the two test servers' request threads spent
(the Messages stub and the shop), divided by the steps.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/step_speed.py [--runs 3] [--steps 20] [--fresh 3]
"""

from __future__ import annotations

import argparse
import html
import http.server
import json
import re
import resource
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import _runtime
from _common import header, load_average, progress, stats, table

TARGET_MEDIAN_RATIO = 1.0
TARGET_P95_RATIO = 1.3
TARGET_FIRST_STEP_RATIO = 1.5
TARGET_CPU_MS_PER_STEP = 10.0
PRODUCTS = [
    ("Kettle", "24.90"),
    ("Toaster", "39.00"),
    ("Mixer", "89.50"),
    ("Blender", "59.00"),
    ("Grinder", "45.00"),
    ("Juicer", "72.00"),
    ("Scale", "19.90"),
    ("Whisk", "7.50"),
    ("Teapot", "29.00"),
    ("Skillet", "49.90"),
    ("Casserole", "99.00"),
    ("Colander", "14.50"),
]
STEP_KINDS = ("scroll", "click (no navigation)", "click (navigates)", "navigate")
SCROLL: dict[str, Any] = {
    "target": {"type": "coordinate", "x": 640, "y": 400},
    "scroll_direction": "down",
    "scroll_amount": 5,
}
ADD_BUTTON = re.compile(r'button "Add (\w+) to the basket" \[ref=(\w+)\]')
DETAILS_LINK = re.compile(r'link "Details of (\w+)" \[ref=(\w+)\]')


# --- the shop -------------------------------------------------------------------------------------------------------


def shop_page() -> str:
    """32 controls: 4 navigation links, a search box and a sort select, 12 add buttons, 12 detail links, 2 buttons."""
    cards = "\n".join(
        f'<article style="height:180px"><h2>{name}</h2><p>{price} EUR</p>'
        f'<button type="button" onclick="added(\'{name}\')">Add {name} to the basket</button> '
        f'<a href="/product/{index}">Details of {name}</a></article>'
        for index, (name, price) in enumerate(PRODUCTS)
    )
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Bench shop</title>
<script>function added(name) {{ const b = document.getElementById('basket');
b.textContent = (parseInt(b.dataset.n || '0') + 1) + ' in the basket, last ' + name; b.dataset.n = parseInt(b.dataset.n || '0') + 1; }}</script>
</head><body><nav><a href="/shop">Shop</a> <a href="/product/0">Offers</a> <a href="/product/1">News</a> <a href="/shop">Help</a></nav>
<h1>Bench shop</h1><p id="basket">The basket is empty</p>
<label>Search <input type="search" name="q"></label>
<label>Sort <select><option>Price</option><option>Name</option></select></label>
<button type="button">Filter</button> <button type="button">Clear</button>
{cards}
</body></html>"""


def product_page(index: int) -> str:
    name, price = PRODUCTS[index % len(PRODUCTS)]
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(name)}</title></head>
<body><h1>{html.escape(name)}</h1><p>{price} EUR</p><button type="button">Add to the basket</button>
<a href="/shop">Back to the shop</a></body></html>"""


class ShopHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        match = re.fullmatch(r"/product/(\d+)", self.path)
        body = product_page(int(match.group(1))) if match else shop_page()
        payload = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def shop() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ShopHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


class ServerCpu:
    """CPU seconds spent by the test servers' request threads (one fresh thread per request), so the process's CPU
    less this is the walk's own."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.lock = threading.Lock()
        original = socketserver.ThreadingMixIn.process_request_thread

        def counted(server: Any, request: Any, client_address: Any) -> None:
            try:
                original(server, request, client_address)
            finally:
                with self.lock:
                    self.seconds += time.thread_time()

        socketserver.ThreadingMixIn.process_request_thread = counted  # type: ignore[method-assign,assignment]  # this process only


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """Python CPU milliseconds per step of one side's counted walks, the servers' threads left out."""

    def __init__(self, servers: ServerCpu) -> None:
        self.servers = servers
        self.seconds = 0.0
        self.steps = 0

    @contextmanager
    def walk(self, steps: int) -> Iterator[None]:
        process, server = process_cpu(), self.servers.seconds
        yield
        self.seconds += (process_cpu() - process) - (self.servers.seconds - server)
        self.steps += steps

    def per_step_ms(self) -> float:
        return self.seconds * 1000 / max(self.steps, 1)


# --- the walk -------------------------------------------------------------------------------------------------------


def walk_step(step: int, snapshot: str, site: str) -> tuple[str, dict[str, Any]]:
    """The action of step `step` (1-based), given the last snapshot of the page: scroll, add, open a product, back."""
    kind = (step - 1) % 4
    product = PRODUCTS[(step // 4) % len(PRODUCTS)][0]
    if kind == 0:
        return "scroll", SCROLL
    if kind == 1:
        refs = dict(ADD_BUTTON.findall(snapshot))
        return "left_click", {"target": {"type": "ref", "ref": refs[product]}}
    if kind == 2:
        refs = dict(DETAILS_LINK.findall(snapshot))
        return "left_click", {"target": {"type": "ref", "ref": refs[product]}}
    return "navigate", {"url": f"{site}/shop"}


class WalkingModel:
    """The Messages stub's responder: step k's reply is the walk's action k then read_page; after `steps`, done.

    It reads the refs from the last read_page in the request and notes when each request arrived.
    """

    def __init__(self, site: str, steps: int) -> None:
        self.site = site
        self.steps = steps
        self.arrivals: list[float] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        from scripted_api.wire import multi_tool_use_reply, tool_use_block, tool_use_reply

        self.arrivals.append(time.perf_counter())
        usage = {"input_tokens": 1, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        step = sum(1 for message in request.get("messages", []) if message.get("role") == "assistant") + 1
        if step > self.steps:
            return tool_use_reply("done", {"success": True, "output": f"Walked {self.steps} steps."}, usage=usage)
        name, member_input = walk_step(step, last_read(request), self.site)
        blocks = [
            tool_use_block(name, member_input, toolset_name="browser"),
            tool_use_block("read_page", {}, toolset_name="browser"),
        ]
        return multi_tool_use_reply(blocks, usage=usage)

    def step_seconds(self) -> list[float]:
        """Step k's time: from the request that asked for it to the next request."""
        return [later - earlier for earlier, later in zip(self.arrivals, self.arrivals[1:], strict=False)]


def last_read(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages", [])):
        for block in reversed(message.get("content") or []):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = "\n".join(part.get("text", "") for part in block.get("content") or [] if isinstance(part, dict))
                if "[ref=" in text:
                    return text
    return ""


def pilothouse_walk(model: WalkingModel, site: str, steps: int) -> list[float]:
    from runs.models import Run

    model.arrivals.clear()
    run = _runtime.new_run(site, max_turns=steps + 5, task="Walk the shop.")
    Run.objects.filter(pk=run.pk).update(start_url=f"{site}/shop")
    _runtime.execute(run)
    run.refresh_from_db()
    if run.status != "succeeded":
        raise SystemExit(f"run {run.public_id} ended {run.status}: {run.error_code} {run.error_message}")
    return model.step_seconds()[:steps]


def bare_walk(site: str, steps: int) -> list[float]:
    """The same walk by Playwright alone on the worker's Chromium: action, aria snapshot, viewport PNG per step."""
    from runtime.worker import browser_host

    host = browser_host()

    async def walk() -> list[float]:
        context = await host.new_context()
        try:
            page = await context.new_page()
            await page.goto(f"{site}/shop")
            snapshot, seconds = "", []
            for step in range(1, steps + 1):
                started = time.perf_counter()
                name, member_input = walk_step(step, snapshot, site)
                if name == "scroll":
                    await page.evaluate("dy => window.scrollBy(0, dy)", 100 * SCROLL["scroll_amount"])
                elif name == "left_click":
                    await page.locator(f"aria-ref={member_input['target']['ref']}").click()
                else:
                    await page.goto(member_input["url"])
                snapshot = await page.aria_snapshot(mode="ai", depth=15)
                await page.screenshot(type="png")
                seconds.append(time.perf_counter() - started)
            return seconds
        finally:
            await context.close()

    return host.run(walk(), timeout=300)


# --- processes ------------------------------------------------------------------------------------------------------


@contextmanager
def stub(site: str, steps: int) -> Iterator[tuple[WalkingModel, str]]:
    from scripted_api.wire import WireServer

    model = WalkingModel(site, steps)
    with WireServer(model) as server:
        yield model, server.base_url


def fresh_process(site: str, steps: int, warm: bool) -> None:
    """One run in this new process, as a worker's first (after its warm-up unless `warm` is false); prints JSON."""
    with stub(site, steps) as (model, base_url):
        _runtime.configure(base_url)
        if warm:
            from runtime.worker import warm_up

            warm_up()
        seconds = pilothouse_walk(model, site, steps)
    from runtime.worker import close_browser_host

    close_browser_host()
    print(json.dumps(seconds))


def run_fresh(site: str, steps: int, warm: bool) -> list[float]:
    args = [sys.executable, str(Path(__file__)), "--first-run", "--site", site, "--steps", str(steps)]
    args += [] if warm else ["--cold"]
    done = subprocess.run(args, capture_output=True, text=True, cwd=_runtime.BENCH.parent, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"a fresh process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ms(values: list[float]) -> list[float]:
    return [value * 1000 for value in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="walks of each kind, alternating")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--fresh", type=int, default=3, help="fresh warm worker processes for the first step")
    parser.add_argument("--cold", action="store_true", help="with --first-run: no warm-up")
    parser.add_argument("--first-run", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--site", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_run:
        fresh_process(args.site, args.steps, warm=not args.cold)
        return

    print(header("Step speed"))
    ours: list[float] = []
    bare: list[float] = []
    kinds: list[str] = []  # the kind of each counted step, the same for both sides
    loads = [load_average()]
    servers = ServerCpu()
    our_cpu, bare_cpu = CpuMeter(servers), CpuMeter(servers)
    with shop() as site:
        with stub(site, args.steps) as (model, base_url):
            _runtime.configure(base_url)
            from runtime.worker import close_browser_host, warm_up

            warm_up()
            # one walk of each, not counted: pages cached, connections open, the code paths run once
            pilothouse_walk(model, site, args.steps)
            bare_walk(site, args.steps)
            for _ in progress(range(args.runs), args.runs, "walks"):
                with bare_cpu.walk(args.steps):
                    bare.extend(ms(bare_walk(site, args.steps))[1:])
                with our_cpu.walk(args.steps):
                    ours.extend(ms(pilothouse_walk(model, site, args.steps))[1:])
                kinds.extend(STEP_KINDS[(step - 1) % 4] for step in range(2, args.steps + 1))
            close_browser_host()
        loads.append(load_average())
        first_warm = [
            ms(run_fresh(site, args.steps, warm=True)) for _ in progress(range(args.fresh), args.fresh, "fresh")
        ]
        first_cold = [ms(run_fresh(site, args.steps, warm=False)) for _ in range(max(1, args.fresh // 3))]
        loads.append(load_average())

    ours_stats, bare_stats = stats(ours), stats(bare)
    warm_firsts = [steps[0] for steps in first_warm]
    warm_rest = [value for steps in first_warm for value in steps[1:]]
    cold_firsts = [steps[0] for steps in first_cold]
    rows = [
        ["Pilothouse (action + read_page turn)", ours_stats["n"], ours_stats["median"], ours_stats["p95"], ours_stats["mean"]],
        ["bare Playwright (action + snapshot + PNG)", bare_stats["n"], bare_stats["median"], bare_stats["p95"], bare_stats["mean"]],
        ["first step of a warm worker", len(warm_firsts), stats(warm_firsts)["median"], max(warm_firsts), stats(warm_firsts)["mean"]],
        ["first step of a cold worker (no warm-up)", len(cold_firsts), stats(cold_firsts)["median"], max(cold_firsts), stats(cold_firsts)["mean"]],
    ]  # fmt: skip
    print(
        f"{args.runs} walks of {args.steps} steps each way (first step of each walk left out); load averages: {' -> '.join(loads)}\n"
    )
    print(table(["per step", "steps", "median ms", "p95 ms", "mean ms"], rows))
    print(
        f"\nPython CPU per step (this process, servers' threads left out): Pilothouse {our_cpu.per_step_ms():.1f} ms, "
        f"bare Playwright {bare_cpu.per_step_ms():.1f} ms (target for Pilothouse: <= {TARGET_CPU_MS_PER_STEP:.0f} ms)"
    )
    median_ratio = ours_stats["median"] / bare_stats["median"]
    p95_ratio = ours_stats["p95"] / bare_stats["p95"]
    first_ratio = stats(warm_firsts)["median"] / stats(warm_rest)["median"]
    print()
    print(
        table(
            ["ratio", "value", "target", "verdict"],
            [
                ["median, Pilothouse / bare", f"{median_ratio:.2f}x", f"<= {TARGET_MEDIAN_RATIO}x", verdict(median_ratio, TARGET_MEDIAN_RATIO)],
                ["p95, Pilothouse / bare", f"{p95_ratio:.2f}x", f"<= {TARGET_P95_RATIO}x", verdict(p95_ratio, TARGET_P95_RATIO)],
                ["first warm step / its run's other steps", f"{first_ratio:.2f}x", f"<= {TARGET_FIRST_STEP_RATIO}x", verdict(first_ratio, TARGET_FIRST_STEP_RATIO)],
            ],
        )
    )  # fmt: skip
    by_kind: dict[str, tuple[list[float], list[float]]] = {kind: ([], []) for kind in STEP_KINDS}
    for kind, our_value, bare_value in zip(kinds, ours, bare, strict=True):
        by_kind[kind][0].append(our_value)
        by_kind[kind][1].append(bare_value)
    print()
    print(
        table(
            ["step kind", "Pilothouse median ms", "bare median ms", "ratio"],
            [[kind, stats(a)["median"], stats(b)["median"], f"{stats(a)['median'] / stats(b)['median']:.2f}x"] for kind, (a, b) in by_kind.items()],
        )
    )  # fmt: skip


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "MISSED"


if __name__ == "__main__":
    main()
