"""A browser session's page shows its live picture and lets a member take control, with the run page's machinery (the
worker process's one inbox and watcher, an acknowledgement per input): in real Chromium against Daphne and a real
worker, a person's click and typing reach the page the client opened over CDP while the client is idle, and the client
sees their effect over CDP."""

import os
import re

import pytest
from playwright.sync_api import expect

from tests.support import browser_sessions, live
from tests.support.browser_sessions import BrowsersApi
from tests.support.launching import wait_for
from tests.support.live import on_the_live_picture, signed_in_page

asgi_server = live.asgi_server
chromium = live.chromium
browsers_worker = browser_sessions.browsers_worker

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("browsers_worker", "transactional_db"),
]

# Where tests/pages/control.html puts its field and its button (CSS pixels of the session's viewport).
NAME_FIELD = (250, 120)
GO_BUTTON = (200, 225)


def test_a_person_takes_control_of_a_session_while_its_client_is_idle(
    asgi_server, chromium, alice, acme_key, charlie_client, site
):
    api = BrowsersApi(asgi_server, acme_key)
    session = api.running(viewport_width=1024, viewport_height=640)
    assert session["status"] == "running", session
    # the client: its own program over CDP, through the web tier, then idle
    client = chromium.browser_type.connect_over_cdp(session["cdp_url"])
    try:
        client_page = client.contexts[0].new_page()
        client_page.goto(f"{site}/control.html")

        page = signed_in_page(chromium, asgi_server, alice)
        page.goto(f"{asgi_server}/browsers/{session['id']}/")
        assert page.title().startswith(f"Browser {session['id']}") and "<script" not in page.title()
        page.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 1", timeout=45000)
        expect(page.locator("#live-caption")).to_contain_text("control.html")
        expect(page.locator("#live-view")).not_to_have_class(re.compile(r"\binteractive\b"))

        page.locator("#take-control").click()
        expect(page.locator("#live-view")).to_have_class(re.compile(r"\binteractive\b"), timeout=10000)
        page.locator("#live-img").scroll_into_view_if_needed()
        page.mouse.click(*on_the_live_picture(page, *NAME_FIELD))
        page.keyboard.type("hello ui")
        page.keyboard.press("Enter")
        page.mouse.click(*on_the_live_picture(page, *GO_BUTTON))
        # The worker answers each input once applied: two clicks (press and release), eight characters and Enter.
        page.wait_for_function("Number(document.getElementById('live-view').dataset.acked || 0) >= 13", timeout=30000)
        assert page.locator("#control-status").is_hidden() or page.locator("#control-status").inner_text() == ""

        # the client sees what the person did, over CDP
        wait_for(
            lambda: client_page.inner_text("#log") == "entered hello ui | clicked go",
            timeout=30, message="the person's typing and click on the client's page",
        )  # fmt: skip
        assert client_page.input_value("#name") == "hello ui"

        # Hand back: the picture stays, input is no longer sent
        page.locator("#take-control").click()
        expect(page.locator("#live-view")).not_to_have_class(re.compile(r"\binteractive\b"))

        # another workspace's member sees neither the page nor its picture
        assert charlie_client.get(f"/browsers/{session['id']}/").status_code == 404

        # the session stops: the page says there is nothing left to control
        api.stop(session["id"])
        expect(page.locator("#live-view")).to_have_attribute("data-control", "withdrawn", timeout=60000)
    finally:
        client.close()
    assert api.wait_for(session["id"], ("stopped", "failed"))["status"] == "stopped"
