"""Take control from the run page, as an operator does it: in real Chromium against Daphne and a real worker, the
page's "Take control" pauses the agent, the operator's clicks and typing on the live picture reach the agent's tab
(the page maps them to the tab's own coordinates), and "Hand back" with a note gives the run back to the agent."""

import os
import re

import pytest
from playwright.sync_api import expect

from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support import live
from tests.support.clients import ApiClient
from tests.support.launching import events, finished, wait_for
from tests.support.live import on_the_live_picture, signed_in_page
from tests.support.replies import HeldReply, browser, done, last_tool_result_text

asgi_server = live.asgi_server
chromium = live.chromium
messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Where tests/pages/control.html puts its field and its button, in the agent's tab (CSS pixels of its viewport).
NAME_FIELD = (250, 120)
GO_BUTTON = (200, 225)


def test_take_control_drive_the_tab_and_hand_back_from_the_run_page(
    celery_worker, messages_stub, asgi_server, chromium, alice, acme_key, site
):
    # The first reply is held until the person took control: the turn then finishes, and the agent waits.
    held = HeldReply(browser("get_page_text"))
    messages_stub.agent(held, browser("get_page_text"), done(True, "Done."))
    launched = ApiClient(acme_key).post("/runs", {"task": "Look at the page.", "start_url": f"{site}/control.html"})
    assert launched.status_code == 201, launched.content
    run = Run.objects.get(public_id=launched.json()["id"])
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    page.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 1", timeout=45000)

    page.locator("#pause-form button").click()  # while the model answers: its turn still finishes
    expect(page.locator("#control-hint")).to_be_visible()
    expect(page.locator("#live-view")).to_have_class(re.compile(r"\binteractive\b"), timeout=10000)
    held.release.set()
    wait_for(lambda: events(run, "agent.tool_result"), timeout=30, message="the agent's turn to finish")
    page.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 1")

    page.locator("#live-img").scroll_into_view_if_needed()
    page.mouse.click(*on_the_live_picture(page, *NAME_FIELD))
    page.keyboard.type("hello ui")
    page.keyboard.press("Enter")
    page.mouse.click(*on_the_live_picture(page, *GO_BUTTON))
    # The worker answers each input once applied: two clicks (press and release), eight characters and Enter.
    page.wait_for_function("Number(document.getElementById('live-view').dataset.acked || 0) >= 13", timeout=30000)
    assert len(messages_stub.requests) == 1, "no request while a person has control"

    page.fill("#resume-note", "I typed the name and pressed Go.")
    page.locator("#resume-form button").click()

    run = finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    requests = messages_stub.requests
    assert "I typed the name and pressed Go." in str(requests[1]["messages"][-1]["content"])
    assert "entered hello ui | clicked go" in last_tool_result_text(requests[2])
