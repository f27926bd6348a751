"""Memory a run's BrowserContext adds to the worker's Chromium, and what Chromium flags and per-run options change it.

For each variant: one Chromium launched with the driver's arguments plus the variant's; one context on the shop
fixture as the baseline; then N more contexts, each as a run leaves its context mid-walk (the product listing, a
news article and a search page it opened in tabs of its own, all but the last closed unless the variant keeps
them). The PSS (shared pages split among their sharers) of Chromium's processes is summed after each; "per added
context" is the growth over the baseline divided by N. Variants run in turn, each in a fresh Chromium.

    .venv/bin/python bench/context_memory.py [--contexts 4] [--repeats 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import descendants, header, pss_kib, setup_django, table

VARIANTS: dict[str, dict[str, Any]] = {
    "driver's flags (as committed)": {},
    "+ --disable-dev-shm-usage": {"args": ["--disable-dev-shm-usage"]},
    "+ --renderer-process-limit=1": {"args": ["--renderer-process-limit=1"]},
    "+ site-per-process off": {"args": ["--disable-site-isolation-trials", "--disable-features=site-per-process"]},
    "+ V8 lite mode (--js-flags=--lite-mode)": {"args": ["--js-flags=--lite-mode"]},
    "+ V8 optimize for size": {"args": ["--js-flags=--optimize-for-size"]},
    "+ low-end device mode": {"args": ["--enable-low-end-device-mode"]},
    "+ low-end device mode and V8 lite mode": {"args": ["--enable-low-end-device-mode", "--js-flags=--lite-mode"]},
    "+ no back-forward cache": {"args": ["--disable-features=BackForwardCache"]},
    "block images, media and fonts per run": {"block": True},
    "tabs the run left stay open": {"keep_tabs": True},
    "critical memory pressure signalled to each page": {"pressure": True},
}
PAGES = ("product_listing.html", "news_article.html", "search_results.html")
BLOCKED_TYPES = {"image", "media", "font"}


def chromium_pss_kib() -> int:
    """PSS of this process's descendants that are Chromium (the driver's node process left out)."""
    total = 0
    for pid in descendants(os.getpid()):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"chrom" in command.split(b"\0")[0] or b"--type=" in command:
            total += pss_kib(pid)
    return total


async def open_context(browser: Any, site: str, *, block: bool, keep_tabs: bool, pressure: bool) -> Any:
    context = await browser.new_context(viewport={"width": 1280, "height": 800}, device_scale_factor=1)
    if block:

        async def refuse(route: Any) -> None:
            if route.request.resource_type in BLOCKED_TYPES:
                await route.abort()
            else:
                await route.continue_()

        await context.route("**/*", refuse)
    pages = []
    for name in PAGES:
        page = await context.new_page()
        await page.goto(f"{site}/{name}", wait_until="load")
        await page.aria_snapshot(mode="ai")
        await page.screenshot(type="png")
        pages.append(page)
    if not keep_tabs:
        for page in pages[:-1]:
            await page.close()
    if pressure:
        # what Chromium does on a low-memory signal: caches purged, a full garbage collection, free pages returned
        for page in context.pages:
            session = await context.new_cdp_session(page)
            await session.send("Memory.simulatePressureNotification", {"level": "critical"})
            await session.detach()
    return context


async def measure(executable: str, base_args: list[str], site: str, variant: dict[str, Any], contexts: int) -> float:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=[*base_args, *variant.get("args", [])]
        )
        try:
            options = {key: variant.get(key, False) for key in ("block", "keep_tabs", "pressure")}
            opened = [await open_context(browser, site, **options)]
            await asyncio.sleep(1.0)  # let the processes settle before sampling
            base = chromium_pss_kib()
            for _ in range(contexts):
                opened.append(await open_context(browser, site, **options))
            await asyncio.sleep(1.0)
            added = chromium_pss_kib() - base
        finally:
            await browser.close()
    return added / contexts / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--contexts", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--only", action="append", help="variants whose name contains this (repeatable); the first is the baseline"
    )
    args = parser.parse_args()

    from _common import serve
    from make_fixtures import write_fixtures

    setup_django()
    from django.conf import settings

    from runtime.browser.host import CHROMIUM_ARGS

    print(header("Context memory"))
    fixtures = Path(tempfile.mkdtemp(prefix="pilothouse-fixtures-"))
    write_fixtures(fixtures)
    rows = []
    started = time.perf_counter()
    with serve(fixtures) as site:
        chosen = {
            name: variant
            for name, variant in VARIANTS.items()
            if not args.only or name == next(iter(VARIANTS)) or any(part in name for part in args.only)
        }
        results: dict[str, list[float]] = {name: [] for name in chosen}
        for _ in range(args.repeats):  # variants interleaved, so drift in the machine's load spreads over all
            for name, variant in chosen.items():
                executable = settings.BROWSER_EXECUTABLE
                added = asyncio.run(measure(executable, list(CHROMIUM_ARGS), site, variant, args.contexts))
                results[name].append(added)
                print(f"  {name}: {added:.1f} MiB per added context", flush=True)
    base = min(results[next(iter(VARIANTS))])
    for name, values in results.items():
        rows.append([name, min(values), max(values), f"{min(values) - base:+.1f}"])
    print(f"{args.contexts} contexts added to one, {args.repeats} repeats, {time.perf_counter() - started:.0f} s\n")
    print(table(["variant", "PSS MiB per added context (min)", "max", "vs. as committed (min)"], rows))


if __name__ == "__main__":
    main()
