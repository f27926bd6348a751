"""Token economy: what a read_page observation costs against raw HTML and a screenshot, and the prompt-cache hit ratio.

Part A builds the fixture pages (make_fixtures.py) and serves them from a local HTTP server and reads each through the real Playwright
toolset, as the runtime does. Part B plays a scripted 20-turn run through the real runtime against the Messages wire
server and reports the share of input tokens read from the prompt cache from turn 3 on, plus the runtime's
cache_control breakpoints and whether each request's cached prefix is byte-stable across turns.

    .venv/bin/python bench/token_economy.py            # both parts
    .venv/bin/python bench/token_economy.py --part a   # pages only (no database needed)
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import Stopwatch, header, progress, serve, stats, table
from make_fixtures import write_fixtures

# The pages are built by make_fixtures.py (seeded, so the same bytes every time) rather than kept in the repo.
FIXTURES = Path(tempfile.mkdtemp(prefix="pilothouse-fixtures-"))
CHARS_PER_TOKEN = 4
VIEWPORT = (1280, 800)
# Anthropic's documented estimate for an image that needs no resizing: tokens = width * height / 750.
SCREENSHOT_TOKENS = VIEWPORT[0] * VIEWPORT[1] // 750
CACHE_TARGET = 0.80


def tokens(chars: int) -> int:
    return chars // CHARS_PER_TOKEN


def text_of(content: list[Any]) -> str:
    return "\n".join(block["text"] for block in content if block.get("type") == "text")


def part_a(chromium: str, repeats: int) -> list[list[Any]]:
    """Sizes (and read latency) of each fixture page as raw HTML, read_page, its interactive filter, and page text."""
    from anthropic.tools.browser import BetaToolsetCallContext

    from runtime.browser.host import BrowserHost
    from runtime.browser.network_guard import NetworkGuard
    from runtime.browser.toolset import PlaywrightBrowserToolset

    pages = sorted(write_fixtures(FIXTURES))
    host = BrowserHost(chromium)
    rows: list[list[Any]] = []
    try:

        async def build() -> PlaywrightBrowserToolset:
            context = await host.new_context()
            toolset = PlaywrightBrowserToolset(
                context=context, network_guard=NetworkGuard(allowed_private_hosts={"127.0.0.1"})
            )
            await toolset.install_guard()
            return toolset

        toolset = host.run(build(), timeout=60)

        def call(name: str, **member_input: Any) -> list[Any]:
            # (the SDK's content block params: TypedDicts, read here as plain dicts)
            # the SDK pipeline the runtime uses: the tool_result content blocks the model would receive
            return host.run(toolset.call(BetaToolsetCallContext(), name, member_input), timeout=60)

        with serve(FIXTURES) as site:
            for page in progress(pages, len(pages), "read pages"):
                raw = page.read_text(encoding="utf-8")
                call("navigate", url=f"{site}/{page.name}")
                timings = []
                observation = ""
                for _ in range(repeats):
                    with Stopwatch() as watch:
                        observation = text_of(call("read_page"))
                    timings.append(watch.ms)
                interactive = text_of(call("read_page", filter="interactive"))
                page_text = text_of(call("get_page_text"))
                shot = call("screenshot")
                png_b64 = sum(
                    len(block.get("source", {}).get("data", "")) for block in shot if block["type"] == "image"
                )
                rows.append(
                    [
                        page.stem,
                        len(raw),
                        tokens(len(raw)),
                        len(observation),
                        tokens(len(observation)),
                        tokens(len(interactive)),
                        tokens(len(page_text)),
                        SCREENSHOT_TOKENS,
                        png_b64 // 1024,
                        f"{len(observation) / len(raw):.0%}",
                        stats(timings)["median"],
                    ]
                )
        host.run(toolset.close(), timeout=30)
    finally:
        host.close()
    return rows


def part_b(turns: int) -> dict[str, Any]:
    """A scripted run through the real runtime: cache reads per request, breakpoints, and prefix stability."""
    import _runtime

    with _runtime.fixture_site() as site, _runtime.stub_process(site, turns, with_usage=False) as base_url:
        _runtime.configure(base_url)
        from agent_platform.models import ModelRequest
        from scripted_api import wire

        run = _runtime.new_run(site)
        recorded: list[dict[str, Any]] = []
        captured = capture_requests(recorded)
        try:
            bar = progress(range(1), 1, f"{turns}-turn scripted run")
            for _ in bar:
                _runtime.execute(run)
        finally:
            captured()
        run.refresh_from_db()
        rows = list(ModelRequest.objects.filter(run=run).order_by("created_at", "id"))

    table_rows = []
    for number, (row, request) in enumerate(zip(rows, recorded, strict=False), start=1):
        blocks = wire._prompt_blocks(request)
        breakpoints = [i for i, block in enumerate(blocks) if block.breakpoint]
        prompt = row.input_tokens + row.cache_read_input_tokens + row.cache_creation_input_tokens
        stable = ""
        if number < len(recorded):
            following = wire._prompt_blocks(recorded[number])
            last = breakpoints[-1] if breakpoints else -1
            # the next request must start with this request's prefix up to its last breakpoint, or it cannot read it
            stable = (
                "yes" if last < 0 or (last < len(following) and following[last].digest == blocks[last].digest) else "NO"
            )
        table_rows.append(
            [
                number,
                prompt,
                row.cache_read_input_tokens,
                row.cache_creation_input_tokens,
                row.input_tokens,
                f"{row.cache_read_input_tokens / prompt:.0%}" if prompt else "n/a",
                len(breakpoints),
                stable,
            ]
        )
    later = rows[2:]
    read = sum(r.cache_read_input_tokens for r in later)
    total = sum(r.input_tokens + r.cache_read_input_tokens + r.cache_creation_input_tokens for r in later)
    ratio = read / total if total else float("nan")
    print(f"## B. Prompt cache over a {turns}-turn scripted run (run {run.public_id}, status {run.status})\n")
    print(
        table(
            [
                "request",
                "prompt tok",
                "cache read",
                "cache write",
                "uncached",
                "read share",
                "breakpoints",
                "prefix stable",
            ],
            table_rows,
        )
    )
    verdict = "met" if ratio >= CACHE_TARGET else "MISSED"
    print(
        f"\ncache hit ratio from request 3 on: {ratio:.1%} of {total:,} input tokens read from the cache "
        f"(target >= {CACHE_TARGET:.0%}: {verdict})\n"
    )
    return {"ratio": ratio, "requests": len(rows), "rows": table_rows, "status": run.status}


def capture_requests(recorded: list[dict[str, Any]]) -> Callable[[], None]:
    """Record each Messages request body the runtime sends (a copy, since the loop mutates its message list)."""
    import copy

    from anthropic.resources.beta.messages import Messages

    original = Messages.create

    def create(self: Messages, *args: Any, **params: Any) -> Any:
        recorded.append(json.loads(json.dumps(copy.deepcopy(params), default=str)))
        return original(self, *args, **params)

    Messages.create = create  # type: ignore[method-assign]  # recorded in this process only

    def restore() -> None:
        Messages.create = original  # type: ignore[method-assign]  # the SDK's own, back

    return restore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["a", "b", "all"], default="all")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--repeats", type=int, default=5, help="read_page calls per page for its latency")
    parser.add_argument("--turns", type=int, default=20, help="turns of the scripted run (part B)")
    parser.add_argument("--json", type=Path, help="also write the results here as JSON")
    args = parser.parse_args()

    print(header("Token economy"))
    results: dict[str, Any] = {}
    if args.part in ("a", "all"):
        rows = part_a(args.chromium, args.repeats)
        headers = [
            "page",
            "HTML chars",
            "HTML tok",
            "read_page chars",
            "read_page tok",
            "interactive tok",
            "page text tok",
            "screenshot tok",
            "PNG KiB (b64)",
            "read/HTML",
            "read_page ms",
        ]
        print("## A. One observation of each page (tokens ~ chars/4; screenshot = 1280*800/750)\n")
        print(table(headers, rows))
        total_html = sum(r[1] for r in rows)
        total_read = sum(r[3] for r in rows)
        print(
            f"\nread_page is {total_read / total_html:.0%} of the raw HTML over all pages "
            f"({tokens(total_read):,} vs {tokens(total_html):,} tokens); one screenshot is {SCREENSHOT_TOKENS:,} tokens.\n"
        )
        results["part_a"] = [dict(zip(headers, r, strict=True)) for r in rows]
    if args.part in ("b", "all"):
        results["part_b"] = part_b(turns=args.turns)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
