"""In real Chromium: a notice that waits on something ("Cancel requested…", "A new judgment was requested…") goes
from the run page, without a reload, once the run has ended or its judgment arrived."""

import os
import threading

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from agent_platform.celery import app
from judge.models import Judgment
from runs.models import Run
from tests.support import live
from tests.support.factories import make_run
from tests.support.judging import judgment_reply
from tests.support.live import emit, open_subscribed, signed_in_page

asgi_server = live.asgi_server
chromium = live.chromium

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_run_page_after(page, asgi_server: str, run: Run, submit) -> None:
    """Open the run page, submit one of its forms (the page reloads with the notice), wait for the run socket."""
    open_subscribed(page, f"{asgi_server}/runs/{run.public_id}/", ready='"caught_up"')
    with page.expect_navigation():
        submit(page)
    page.wait_for_function("window.Pilothouse && window.Pilothouse.runSocket")


def test_cancel_requested_goes_when_the_run_has_ended(asgi_server, chromium, alice, acme):
    run = make_run(acme, status=Run.Status.RUNNING, started_at=timezone.now())
    emit(run, "run.started", {"model": run.model, "max_turns": 30, "scripted": False})
    page = signed_in_page(chromium, asgi_server, alice)
    open_run_page_after(page, asgi_server, run, lambda page: page.get_by_role("button", name="Cancel run").click())
    notice = page.locator(".messages li", has_text="Cancel requested")
    expect(notice).to_be_visible()
    page.evaluate("window.notReloaded = true")
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.CANCELLED, error_code=Run.ErrorCode.CANCELLED, finished_at=timezone.now()
    )
    emit(run, "run.finished", {"status": "cancelled", "success": None, "error_code": "cancelled",
                               "error_message": "Cancelled by the operator."})  # fmt: skip
    expect(page.locator("#run-status")).to_have_text("cancelled")
    expect(notice).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True
    page.context.close()


def test_a_requested_judgment_notice_goes_when_the_judgment_arrives(asgi_server, chromium, alice, acme, messages_stub):
    run = make_run(acme, status=Run.Status.SUCCEEDED, success=True, output="Done.", finished_at=timezone.now())
    emit(run, "run.finished", {"status": "succeeded", "success": True, "error_code": None, "error_message": None})
    # The re-judge is a real task: a worker some earlier test left running may take it. Its request to the model
    # waits here until the test has seen the notice, so the judgment never arrives before the page shows it.
    notice_seen = threading.Event()

    def held_judgment(request: dict) -> dict:
        notice_seen.wait(timeout=60)
        return judgment_reply("pass", "The page shows the order.")

    messages_stub.judge(held_judgment)
    page = signed_in_page(chromium, asgi_server, alice)
    try:
        open_run_page_after(
            page, asgi_server, run, lambda page: page.get_by_role("button", name="Request judgment").click()
        )
        notice = page.locator(".messages li", has_text="A new judgment was requested")
        expect(notice).to_be_visible()
        page.evaluate("window.notReloaded = true")
        Judgment.objects.create(run=run, verdict="pass", reason="The page shows the order.", model="j")
        emit(run, "run.judged", {"verdict": "pass", "reason": "The page shows the order."})
        expect(page.locator("#judgments")).to_contain_text("The page shows the order.")
        expect(notice).to_have_count(0)
        assert page.evaluate("window.notReloaded") is True
    finally:
        notice_seen.set()
        page.context.close()
        # A re-judge no worker took is still queued: left there, the next worker to start would judge whatever run
        # has this one's id then (SQLite reuses ids after a flush) with another test's scripted replies.
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge("judge")
