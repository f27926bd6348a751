"""The official browser-use-sdk's client.browsers against Daphne and a real worker: create, Playwright over its
cdpUrl, get, list and stop."""

from decimal import Decimal

import pytest
from browser_use_sdk.v4 import BrowserUse
from playwright.sync_api import sync_playwright

from tests.support import browser_sessions, live

asgi_server = live.asgi_server
browsers_worker = browser_sessions.browsers_worker

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("browsers_worker", "transactional_db"),
]


def test_create_then_playwright_over_its_cdp_url_then_stop(asgi_server, acme_key, umbrella_key, site):
    client = BrowserUse(api_key=acme_key, base_url=f"{asgi_server}/api/v4")
    created = client.browsers.create(
        timeout=5, browser_screen_width=1024, browser_screen_height=700, metadata={"team": "qa"}
    )
    assert created.status.value == "active" and created.cdp_url and created.live_url
    assert created.metadata == {"team": "qa"}

    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(created.cdp_url)
        page = browser.contexts[0].new_page()
        page.goto(f"{site}/index.html")
        assert page.evaluate("[innerWidth, innerHeight]") == [1024, 700]
        assert page.title()
        browser.close()

    listed = client.browsers.list(filter_by="active")
    assert [item.id for item in listed.items] == [created.id] and listed.total_items == 1
    assert BrowserUse(api_key=umbrella_key, base_url=f"{asgi_server}/api/v4").browsers.list().total_items == 0

    stopped = client.browsers.stop(created.id)
    assert stopped.status.value == "stopped" and stopped.finished_at is not None and stopped.cdp_url is None
    assert Decimal(stopped.browser_cost) == 0  # BROWSER_MINUTE_PRICE_USD is 0 unless an installation prices it
    assert client.browsers.get(created.id).status.value == "stopped"
