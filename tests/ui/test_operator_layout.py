"""The operator pages laid out in real Chromium at a desktop (1,440 px) and a phone (390 px) width: the triage
screenshot scales to its column beside (or under) the truth panel, a long run's timeline folds, and the nav and the
run page fit a phone."""

import os

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from judge.models import Judgment
from runs.models import Run
from runs.screenshots import save_screenshot
from tests.support import live
from tests.support.factories import make_run
from tests.support.live import emit, signed_in_page

asgi_server = live.asgi_server
chromium = live.chromium

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = [1440, 390]


def page_screenshot(chromium, width: int = 1280, height: int = 800) -> bytes:
    """A real browser screenshot at its natural size (what a run stores), wider than any triage column."""
    page = chromium.new_page(viewport={"width": width, "height": height})
    page.set_content("<body style='margin:0;background:#dde'><h1 style='font-size:80px'>Shop · Kettle €39</h1>")
    image = page.screenshot()
    page.close()
    return image


def at_width(page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})


def overflow(page) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no horizontal scrolling)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def fully_inside_viewport(page, locator) -> bool:
    box = locator.bounding_box()
    width = page.evaluate("window.innerWidth")
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5


@pytest.fixture
def overclaim(chromium, acme):
    run = make_run(acme, task="Buy the kettle.", status=Run.Status.RUNNING, max_turns=4)
    url = save_screenshot(run.public_id, page_screenshot(chromium))
    emit(run, "agent.final_view", {"url": "http://shop.test/", "title": "Shop", "screenshot_url": url})
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.SUCCEEDED, success=True, output="Bought it.", data={"items": ["kettle"]},
        finished_at=timezone.now(),
    )  # fmt: skip
    Judgment.objects.create(run=run, verdict="fail", reason="The basket is empty.", model="j")
    return run


@pytest.mark.parametrize("width", WIDTHS)
def test_the_triage_screenshot_scales_to_its_column_and_the_truth_panel_stays_whole(
    asgi_server, chromium, alice, overclaim, width
):
    page = signed_in_page(chromium, asgi_server, alice)
    at_width(page, width)
    page.goto(f"{asgi_server}/triage/")
    shot = page.locator(".triage-shot img")
    expect(shot).to_be_visible()
    page.wait_for_function("document.querySelector('.triage-shot img').complete")
    button = page.get_by_role("button", name="Record truth")
    assert overflow(page) == 0
    assert fully_inside_viewport(page, button)
    # the button shows its whole label (not clipped by a squeezed column)
    assert button.evaluate("node => node.scrollWidth <= node.clientWidth")
    panel = page.locator(".triage-panel").bounding_box()
    column = page.locator(".triage-shot").bounding_box()
    assert shot.bounding_box()["width"] <= column["width"] + 0.5
    if width >= 1000:
        assert panel["width"] >= 300 and panel["x"] > column["x"], "side by side, the panel readable"
    else:
        assert column["y"] > panel["y"], "on a phone the screenshot stacks under the panel"
    page.context.close()


def long_run(acme, turns: int = 9) -> Run:
    """A finished run of `turns` browser turns with long results, as a nine-turn demo run leaves."""
    run = make_run(acme, task="Compare every kettle on the shop's three pages.", status=Run.Status.RUNNING)
    emit(run, "run.started", {"model": run.model, "max_turns": 30, "scripted": False})
    page_text = "\n".join(f"- Kettle model {n}: €{30 + n}, in stock, 1.{n} litres, stainless steel" for n in range(14))
    for turn in range(1, turns + 1):
        use = f"t{turn}"
        emit(
            run, "agent.message", {"text": f"Reading page {turn} of the listing to compare the kettles.", "turn": turn}
        )
        emit(run, "agent.tool_use", {"id": use, "name": "navigate", "toolset": "browser",
                                     "input": {"url": f"http://shop.test/kettles?page={turn}"}, "turn": turn})  # fmt: skip
        emit(run, "agent.tool_result", {"tool_use_id": use, "name": "navigate", "content": page_text, "notices": [],
                                        "is_error": False, "screenshot_url": None,
                                        "url": f"http://shop.test/kettles?page={turn}"})  # fmt: skip
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.CANCELLED, error_code=Run.ErrorCode.CANCELLED, finished_at=timezone.now(),
        signals={"turns": turns, "max_turns": 30, "verdict_turn": "none", "verdict_followed": None},
    )  # fmt: skip
    emit(run, "run.finished", {"status": "cancelled", "success": None, "error_code": "cancelled",
                               "error_message": "Cancelled by the operator."})  # fmt: skip
    return run


@pytest.mark.parametrize("width", WIDTHS)
def test_a_long_runs_timeline_collapses_and_expands_and_the_page_fits(asgi_server, chromium, alice, acme, width):
    run = long_run(acme)
    page = signed_in_page(chromium, asgi_server, alice)
    at_width(page, width)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    steps = page.locator("#timeline details.ev-fold")
    expect(steps).to_have_count(27)
    assert overflow(page) == 0
    assert fully_inside_viewport(page, page.locator(".mainnav").get_by_role("link", name="Settings"))
    tall = page.evaluate("document.documentElement.scrollHeight")

    page.get_by_role("button", name="Collapse all").click()
    assert page.eval_on_selector_all("#timeline details.ev-fold", "all => all.every(d => !d.open)")
    short = page.evaluate("document.documentElement.scrollHeight")
    assert short < tall * 0.7, (short, tall)
    # every step still names itself in its summary line
    expect(page.locator("#timeline summary.ev-meta").first).to_contain_text("Claude")

    page.locator("#timeline summary.ev-meta").nth(2).click()
    assert page.eval_on_selector_all("#timeline details.ev-fold", "all => all.filter(d => d.open).length") == 1
    page.get_by_role("button", name="Expand all").click()
    assert page.eval_on_selector_all("#timeline details.ev-fold", "all => all.every(d => d.open)")
    # what ended it, in the signals: not the agent
    expect(page.locator("#signals")).to_contain_text("none (the run was cancelled)")
    page.context.close()


def test_steps_drawn_live_fold_like_the_servers_and_follow_collapse_all(asgi_server, chromium, alice, acme):
    run = make_run(acme, task="A run that goes on.", status=Run.Status.RUNNING)
    emit(run, "run.started", {"model": run.model, "max_turns": 30, "scripted": False})
    emit(run, "agent.message", {"text": "First look.", "turn": 1})
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    expect(page.locator("#timeline details.ev-fold")).to_have_count(1)
    page.get_by_role("button", name="Collapse all").click()
    emit(run, "agent.message", {"text": "Second look.", "turn": 2})
    live_step = page.locator("#timeline li[data-seq='3'] details.ev-fold")
    expect(live_step).to_have_count(1)
    assert live_step.evaluate("d => !d.open")
    expect(live_step.locator("summary")).to_contain_text("Claude")
    page.context.close()
