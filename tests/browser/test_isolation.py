"""The worker's Chromium keeps runs apart by process: each run's context has renderers of its own, and a frame of
another site has one of its own too (site isolation), on whichever Chromium the settings choose (the headless shell
when it is installed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.conf import settings
from playwright.async_api import Frame

from runtime.browser.host import BrowserHost
from tests.support import browsers
from tests.support.processes import renderer_pids

host = browsers.host  # the module's browser host (a fixture)

pytestmark = pytest.mark.browser

BALLAST_MIB = 64


def resident_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def renderer_of(frame: Frame) -> int:
    """The renderer process that runs `frame`'s script: the one whose resident set grows by the ballast the frame
    writes (a renderer's command line does not say which pages it serves)."""
    before = {pid: resident_kib(pid) for pid in renderer_pids(os.getpid())}
    await frame.evaluate(f"window.ballast = new Uint8Array({BALLAST_MIB} * 1024 * 1024).fill(1), undefined")
    grown = [pid for pid in renderer_pids(os.getpid()) if resident_kib(pid) - before.get(pid, 0) > BALLAST_MIB * 900]
    assert len(grown) == 1, f"not one renderer grew by the frame's {BALLAST_MIB} MiB: {grown}"
    return grown[0]


def test_runs_never_share_a_renderer_and_a_cross_site_frame_gets_one_of_its_own(host: BrowserHost, site: str) -> None:
    assert host.executable_path == settings.BROWSER_EXECUTABLE
    other_site = site.replace("127.0.0.1", "localhost")  # another host: another site to Chromium

    async def renderers() -> tuple[int, int, int, int]:
        first_run, second_run = await host.new_context(), await host.new_context()
        try:
            first_page, second_page = await first_run.new_page(), await second_run.new_page()
            await first_page.goto(f"{site}/")
            await second_page.goto(f"{site}/")
            await first_page.evaluate(
                "url => new Promise(loaded => { const frame = document.createElement('iframe');"
                " frame.onload = loaded; frame.src = url; document.body.append(frame); })",
                f"{other_site}/",
            )
            (cross_site_frame,) = first_page.main_frame.child_frames
            another_tab = await first_run.new_page()
            await another_tab.goto(f"{site}/")
            return (
                await renderer_of(first_page.main_frame),
                await renderer_of(second_page.main_frame),
                await renderer_of(cross_site_frame),
                await renderer_of(another_tab.main_frame),
            )
        finally:
            await first_run.close()
            await second_run.close()

    first_run, second_run, cross_site_frame, first_runs_other_tab = host.run(renderers(), timeout=60)
    assert first_run != second_run, "two runs' pages of one site shared a renderer"
    assert cross_site_frame not in (first_run, second_run), "a frame of another site ran in its page's renderer"
    # The same run's tab of the same site may share its renderer (Chromium's choice), never the other run's.
    assert first_runs_other_tab != second_run
