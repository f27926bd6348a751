"""Watching a run like being there, in real Chromium against Daphne and a real worker: the live picture of the
agent's tab while it runs (and only then), the replay of every screenshot step, the run's Playwright trace with
secrets masked, and the pages at phone and desktop widths."""

import asyncio
import io
import json
import os
import zipfile

import pytest
from django.conf import settings
from django.test import Client
from playwright.async_api import async_playwright
from playwright.sync_api import expect, sync_playwright

from runs.models import Run
from runtime.browser import tracing
from runtime.browser.tracing import mask_archive
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import live
from tests.support.clients import ApiClient
from tests.support.factories import make_run
from tests.support.launching import wait_for
from tests.support.live import CHROMIUM_ARGS, emit, signed_in_page, slow
from tests.support.replies import browser as browser_action

asgi_server = live.asgi_server
chromium = live.chromium
messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def screenshot_seqs(run: Run) -> list[int]:
    return [
        event.seq
        for event in run.events.order_by("seq")
        if event.type in ("agent.tool_result", "agent.final_view") and event.payload.get("screenshot_url")
    ]


@pytest.mark.worker
def test_the_live_view_streams_a_real_run_then_stops_and_the_run_keeps_a_trace_and_a_replay(
    messages_stub_server, celery_worker, messages_stub, asgi_server, chromium, alice, acme, acme_key, site
):
    messages_stub.agent(
        slow(browser_action("scroll", target={"type": "coordinate", "x": 300, "y": 200}, scroll_direction="down"), 3),
        slow(browser_action("left_click", target={"type": "coordinate", "x": 320, "y": 140}), 2.5),
        slow(browser_action("get_page_text"), 2.5),
        slow(tool_use_reply("done", {"success": True, "output": "Looked around."}), 1.5),
    )
    launched = ApiClient(acme_key).post("/runs", {"task": "Look around the page.", "start_url": f"{site}/long.html"})
    assert launched.status_code == 201, launched.content
    run = Run.objects.get(public_id=launched.json()["id"])
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")

    # Frames of the agent's real tab arrive while it runs, with the last action's point marked.
    page.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 2", timeout=45000)
    assert page.get_attribute("#live-img", "src").startswith("data:image/jpeg;base64,")
    expect(page.locator("#live-view")).to_be_visible()
    expect(page.locator("#live-badge")).to_be_visible()
    expect(page.locator("#live-cursor")).to_be_visible(timeout=30000)
    assert page.get_attribute("#live-cursor", "data-action") in ("scroll", "left_click")
    assert page.locator('#timeline [data-type="run.finished"]').count() == 0

    # It stops with the run: the screenshots come back, and the header agrees with the summary.
    page.wait_for_selector('#timeline [data-type="run.finished"]', timeout=60000)
    expect(page.locator("#live-view")).to_be_hidden(timeout=10000)
    expect(page.locator("#viewport")).to_be_visible()
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    expect(page.locator("#run-status")).to_have_text("succeeded")
    expect(page.locator("#verdict")).to_contain_text("Looked around.")
    expect(page.locator("#run-duration")).to_have_text(f"{run.duration_seconds:.0f}s", timeout=10000)
    expect(page.locator("#turns")).to_have_text(str(run.signals["turns"]))
    expect(page.locator("#usage-requests")).to_have_text(str(run.usage_requests))
    frames_at_end = int(page.get_attribute("#live-view", "data-frames"))
    page.wait_for_timeout(1500)
    assert int(page.get_attribute("#live-view", "data-frames")) == frames_at_end

    # The trace: a valid Playwright trace archive listing the run's actions, downloadable by its workspace only.
    client = Client()
    client.force_login(alice)
    response = client.get(f"/runs/{run.public_id}/trace.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = archive.namelist()
    assert "trace.trace" in names and "trace.network" in names
    assert "trace.stacks" not in names, "the worker's call stacks (its code's paths) went into the run's trace"
    actions = [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]
    methods = {entry.get("method") or entry.get("apiName") for entry in actions if entry.get("type") == "before"}
    assert {"mouseClick", "ariaSnapshot"} <= methods, methods
    assert any(entry.get("type") == "frame-snapshot" for entry in actions)
    expect(page.locator("#trace a")).to_have_attribute("href", f"/runs/{run.public_id}/trace.zip")

    # Replay steps through every screenshot event in order, by keyboard.
    expected = screenshot_seqs(run)
    assert len(expected) >= 3
    page.reload()
    page.locator("#replay-open").click()
    expect(page.locator("#replay")).to_be_visible()
    seen = [int(page.get_attribute("#replay", "data-seq"))]
    for _ in range(len(expected) - 1):
        page.keyboard.press("ArrowRight")
        seen.append(int(page.get_attribute("#replay", "data-seq")))
    assert seen == expected
    page.keyboard.press("ArrowRight")  # past the last step stays there
    assert int(page.get_attribute("#replay", "data-seq")) == expected[-1]
    expect(page.locator("#replay-position")).to_have_text(f"step {len(expected)} of {len(expected)}")
    page.keyboard.press("ArrowLeft")
    assert int(page.get_attribute("#replay", "data-seq")) == expected[-2]
    expect(page.locator("#replay-message")).not_to_be_empty()
    page.keyboard.press("Escape")
    expect(page.locator("#replay")).to_be_hidden()
    page.context.close()


def test_another_workspace_gets_no_trace_and_no_live_socket(asgi_server, chromium, charlie, acme):
    run = make_run(acme, status=Run.Status.RUNNING)
    client = Client()
    client.force_login(charlie)
    assert client.get(f"/runs/{run.public_id}/trace.zip").status_code == 404
    page = signed_in_page(chromium, asgi_server, charlie)
    page.goto(f"{asgi_server}/login/")
    code = page.evaluate(
        """runId => new Promise(resolve => {
            const socket = new WebSocket(`ws://${location.host}/ws/runs/${runId}/live/`);
            socket.onclose = e => resolve(e.code);
        })""",
        run.public_id,
    )
    assert code == 4404
    page.context.close()


def test_a_trace_keeps_no_secret_value_the_agent_typed(tmp_path, site):
    """A real Chromium trace of typing a secret into a form and posting it, then the masking the worker applies."""
    secret = "canary-s3cret/&value"
    raw, masked = tmp_path / "raw.zip", tmp_path / "masked.zip"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=settings.BROWSER_EXECUTABLE, args=CHROMIUM_ARGS)
        context = browser.new_context()
        context.tracing.start(screenshots=True, snapshots=True)
        page = context.new_page()
        page.set_content(
            f'<form method="get" action="{site}/index.html"><input name="q" id="q"><button>Go</button></form>'
        )
        page.locator("#q").fill(secret)
        page.keyboard.type(secret)
        page.locator("button").click()
        page.wait_for_load_state()
        context.tracing.stop(path=str(raw))
        browser.close()
    everything = b"".join(zipfile.ZipFile(raw).read(name) for name in zipfile.ZipFile(raw).namelist())
    assert secret.encode() in everything  # what an unmasked trace would have given away
    mask_archive(raw, masked, {"SEARCH_TOKEN": secret})
    archive = zipfile.ZipFile(masked)
    assert "trace.trace" in archive.namelist()
    text = b"".join(archive.read(name) for name in archive.namelist())
    for spelling in (secret, "canary-s3cret%2F%26value", "canary-s3cret/\\u0026value", "canary-s3cret/&amp;value"):
        assert spelling.encode() not in text, spelling
    assert b"{{secret:SEARCH_TOKEN}}" in text


def test_a_runs_trace_records_its_calls_without_the_workers_call_stacks(tmp_path, site):
    """As Playwright writes it, before mask_archive: the client sent no call stacks (a message per call) to it."""
    raw = tmp_path / "raw.zip"

    async def record() -> None:
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=settings.BROWSER_EXECUTABLE, args=CHROMIUM_ARGS)
            context = await browser.new_context()
            await tracing.start(context, "a run")
            page = await context.new_page()
            await page.goto(f"{site}/index.html")
            await page.aria_snapshot(mode="ai")
            await context.tracing.stop(path=str(raw))
            await browser.close()

    asyncio.run(record())
    archive = zipfile.ZipFile(raw)
    assert "trace.stacks" not in archive.namelist()
    actions = [json.loads(line) for line in archive.read("trace.trace").decode().splitlines() if line.strip()]
    assert "ariaSnapshot" in {entry.get("method") for entry in actions if entry.get("type") == "before"}


@pytest.mark.parametrize("width", [390, 1440])
def test_pages_fit_the_screen_at_phone_and_desktop_width(asgi_server, chromium, alice, acme, width):
    run = make_run(acme, task="A task long enough to wrap on a phone " * 4, status=Run.Status.SUCCEEDED, success=True)
    emit(run, "agent.message", {"text": "Reading the page.", "turn": 1})
    page = signed_in_page(chromium, asgi_server, alice)
    page.set_viewport_size({"width": width, "height": 900})
    for path in ("/", f"/runs/{run.public_id}/", "/sessions/", f"/sessions/{run.session.public_id}/", "/usage/",
                 "/settings/", "/runs/new/"):  # fmt: skip
        page.goto(f"{asgi_server}{path}")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        widest = page.evaluate(
            """() => [...document.querySelectorAll('main *')].filter(n => n.getBoundingClientRect().right >
                 window.innerWidth + 1).slice(0, 5).map(n => n.tagName + '.' + n.className)"""
        )
        assert overflow <= 0, f"{path} is {overflow}px wider than a {width}px screen: {widest}"
        expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Runs")).to_be_visible()
    page.context.close()


def test_more_options_carries_the_typed_follow_up_task(asgi_server, chromium, alice, acme):
    run = make_run(acme, judge=True, status=Run.Status.SUCCEEDED, success=True)
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    page.locator("#follow-task").fill("Open the cart & <b>report</b> its total")
    page.locator("#follow-more").click()
    page.wait_for_url("**/runs/new/**")
    expect(page.locator("#id_task")).to_have_value("Open the cart & <b>report</b> its total")
    expect(page.locator("#id_judge")).to_be_checked()
    page.context.close()


def test_a_cancelled_queued_run_reads_as_ended_on_its_live_page(asgi_server, chromium, alice, acme):
    run = make_run(acme, judge=True)
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    page.wait_for_function("window.Pilothouse && window.Pilothouse.runSocket.socket.readyState === 1")
    page.locator("#cancel-form button").click()
    expect(page.locator("#run-status")).to_have_text("cancelled")
    expect(page.locator("#judge-note")).to_contain_text("a cancelled run is not judged")
    expect(page.locator("#judge-pill")).to_have_text("not judged")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED, message="the cancel")
    page.context.close()


@pytest.mark.worker
def test_a_follow_up_launched_while_its_session_runs_waits_behind_it_and_says_so(
    messages_stub_server, celery_worker, messages_stub, acme, acme_key, site
):
    messages_stub.agent(
        slow(browser_action("get_page_text"), 3),
        slow(tool_use_reply("done", {"success": True, "output": "First done."}), 1),
        tool_use_reply("done", {"success": True, "output": "Second done."}),
    )
    api = ApiClient(acme_key)
    first = api.post("/runs", {"task": "Read the page.", "start_url": f"{site}/index.html"}).json()
    wait_for(lambda: Run.objects.get(public_id=first["id"]).status == Run.Status.RUNNING, message="the first run")
    second = api.post("/runs", {"task": "Then report.", "session_id": first["session_id"]}).json()
    follow_up = Run.objects.get(public_id=second["id"])
    waiting = wait_for(lambda: follow_up.events.filter(type="run.waiting").first(), message="the waiting notice")
    assert waiting.payload["behind"] == first["id"]
    assert Run.objects.get(pk=follow_up.pk).status == Run.Status.QUEUED
    wait_for(lambda: Run.objects.get(pk=follow_up.pk).is_finished, timeout=60, message="the follow-up to end")
    earlier, later = Run.objects.get(public_id=first["id"]), Run.objects.get(pk=follow_up.pk)
    assert later.status == Run.Status.SUCCEEDED, later.error_message
    assert later.started_at >= earlier.finished_at
    assert follow_up.events.filter(type="run.waiting").count() == 1
