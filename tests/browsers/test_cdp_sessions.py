"""Browser sessions end to end: Daphne, a real worker with its own Chromium per session, and Playwright in the test
process connected over CDP through the web tier."""

from decimal import Decimal

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

from browsers.models import BrowserSession
from runs.models import Event, Run
from scripted_api.stub import JUDGE_QUEUE
from tests.support import browser_sessions, demo, live, processes
from tests.support.browser_sessions import BrowsersApi
from tests.support.judging import judgment_reply, user_text
from tests.support.launching import wait_for

asgi_server = live.asgi_server
browsers_worker = browser_sessions.browsers_worker
demo_base_url = demo.demo_base_url

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("browsers_worker", "transactional_db"),
]


def test_playwright_over_cdp_drives_a_session_to_the_demo_shop(asgi_server, acme_key, demo_base_url):
    api = BrowsersApi(asgi_server, acme_key)
    session = api.running()
    assert session["status"] == "running", session
    assert session["cdp_url"].startswith("ws://127.0.0.1:")
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_url"])
        page = browser.contexts[0].new_page()
        page.goto(demo_base_url)
        assert "Welcome to Northwind Goods" in page.inner_text("body")
        browser.close()
    api.stop(session["id"])
    ended = api.wait_for(session["id"], ("stopped", "failed"))
    assert ended["status"] == "stopped" and ended["stop_reason"] == "requested"
    types = [event["type"] for event in api.events(session["id"])]
    # (Chromium's own calls home may be refused by the guard before the session is up: they are in the timeline too)
    assert types.index("browser.started") < types.index("browser.navigated") and types[-1] == "browser.ended"


def test_private_addresses_are_refused_in_a_new_context_and_a_new_target(asgi_server, acme_key, site):
    api = BrowsersApi(asgi_server, acme_key)
    session = api.running()
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_url"])
        context = browser.new_context()
        page = context.new_page()
        page.goto(f"{site}/index.html")  # the test pages' host is allowed to the workers
        response = page.goto("http://169.254.169.254/latest/meta-data/")
        assert response is not None and response.status == 403
        assert "metadata" in response.headers["x-pilothouse-refused"]

        cdp = browser.new_browser_cdp_session()
        cdp.send("Target.createTarget", {"url": "http://10.1.2.3/secret"})
        wait_for(
            lambda: any("10.1.2.3" in e["data"].get("url", "") for e in api.events(session["id"]) if e["type"] == "browser.refused"),
            timeout=60, message="the new target's refusal in the timeline",
        )  # fmt: skip

        # a context of its own proxy, and the worker's own files, would go past the guard: refused over CDP
        with pytest.raises(PlaywrightError, match="egress guard"):
            browser.new_context(proxy={"server": "http://10.9.9.9:3128"})
        with pytest.raises(PlaywrightError, match=r"http\(s\)"):
            page.goto("file:///etc/passwd")
        browser.close()
    api.stop(session["id"])
    types = [event["type"] for event in api.events(session["id"])]
    assert "browser.cdp_refused" in types


def test_another_workspaces_key_and_a_wrong_token_are_refused(asgi_server, acme_key, umbrella_key):
    api = BrowsersApi(asgi_server, acme_key)
    session = api.running()
    other = BrowsersApi(asgi_server, umbrella_key)
    assert other.get(session["id"]).status_code == 404
    assert other.http.post(f"/browsers/{session['id']}/stop").status_code == 404
    assert api.get(session["id"]).json()["status"] == "running"

    url = session["cdp_url"]
    forged = url[:-1] + ("0" if url[-1] != "0" else "1")
    with sync_playwright() as playwright:
        with pytest.raises(PlaywrightError):
            playwright.chromium.connect_over_cdp(forged, timeout=15_000)
        api.stop(session["id"])
        api.wait_for(session["id"], ("stopped",))
        with pytest.raises(PlaywrightError):
            playwright.chromium.connect_over_cdp(url, timeout=15_000)


def test_the_idle_timeout_stops_a_session(asgi_server, acme_key):
    api = BrowsersApi(asgi_server, acme_key)
    session = api.running(idle_timeout_seconds=5)
    ended = api.wait_for(session["id"], ("stopped", "failed"), timeout=60)
    assert ended["stop_reason"] == "idle_timeout" and ended["cdp_url"] is None


def test_stop_closes_the_cdp_connection_and_frees_the_processes(asgi_server, acme_key, browsers_worker, site):
    api = BrowsersApi(asgi_server, acme_key)
    before = set(processes.descendants(browsers_worker.process.pid))
    session = api.running()
    started = set(processes.descendants(browsers_worker.process.pid)) - before
    assert any(pid in started for pid in processes.chromium_pids(browsers_worker.process.pid)), "its own Chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_url"])
        page = browser.contexts[0].new_page()
        page.goto(f"{site}/index.html")
        api.stop(session["id"])

        def disconnected() -> bool:
            try:
                page.evaluate("1")
            except PlaywrightError:
                return True
            return False

        wait_for(disconnected, timeout=60, message="the CDP connection's end")
        assert not browser.is_connected()
    ended = api.wait_for(session["id"], ("stopped", "failed"))
    assert ended["status"] == "stopped" and ended["browser_minutes"] >= 1
    wait_for(
        lambda: not any(processes.alive(pid) for pid in started), timeout=60, message="the session's processes' end"
    )


def test_the_recording_a_download_and_the_timeline_are_kept_and_shown_on_its_page(
    asgi_server, acme_key, site, alice_client, charlie_client, settings
):
    api = BrowsersApi(asgi_server, acme_key)
    session = api.running(record=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_url"])
        page = browser.contexts[0].new_page()
        page.goto(f"{site}/browser_download.html")
        with page.expect_download():
            page.click("#get")
        browser.close()
    api.stop(session["id"])
    ended = api.wait_for(session["id"], ("stopped", "failed"))
    assert ended["status"] == "stopped"
    events = api.events(session["id"])
    downloads = [e["data"] for e in events if e["type"] == "browser.download"]
    assert downloads and downloads[0]["name"] == "note.txt"
    assert any(e["type"] == "browser.navigated" and "browser_download.html" in e["data"]["url"] for e in events)

    detail = alice_client.get(f"/browsers/{session['id']}/")
    assert detail.status_code == 200
    text = detail.content.decode()
    assert "note.txt" in text and "Recording (Playwright trace)" in text and "browser.navigated" in text
    note = alice_client.get(f"/browsers/{session['id']}/downloads/note.txt")
    assert b"".join(note.streaming_content) == b"hello from the browser"
    trace = alice_client.get(f"/browsers/{session['id']}/trace.zip")
    assert trace.status_code == 200 and b"".join(trace.streaming_content)[:2] == b"PK"
    assert alice_client.get(f"/browsers/{session['id']}/final.png").status_code == 200
    listed = alice_client.get("/browsers/").content.decode()
    assert session["id"] in listed and "API key" in listed

    usage = api.http.get("/browsers/usage").json()
    assert usage["sessions"] == 1 and usage["browser_minutes"] == ended["browser_minutes"] >= 1
    assert Decimal(usage["cost_usd"]) == 0  # a self-hosted install prices nothing unless it sets a price
    settings.BROWSER_MINUTE_PRICE_USD = Decimal("0.05")  # a later price applies to later sessions only
    row = BrowserSession.objects.get(uuid=session["id"].removeprefix("brs_"))
    assert row.cost_usd() == 0 and row.browser_minutes() == ended["browser_minutes"]
    assert f"{ended['browser_minutes']} browser minute" in alice_client.get("/browsers/").content.decode()
    assert "$0.00" in alice_client.get("/browsers/").content.decode()

    assert charlie_client.get(f"/browsers/{session['id']}/").status_code == 404
    assert charlie_client.get(f"/browsers/{session['id']}/trace.zip").status_code == 404
    assert session["id"] not in charlie_client.get("/browsers/").content.decode()


@pytest.mark.usefixtures("celery_worker")  # the judge's queue
def test_a_session_finished_with_its_agents_claim_is_judged_as_a_run(asgi_server, acme_key, site, messages_stub):
    messages_stub.judge(judgment_reply("pass", "The final page is the test index, as the agent says."))
    api = BrowsersApi(asgi_server, acme_key)
    session = api.running()
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(session["cdp_url"])
        page = browser.contexts[0].new_page()
        page.goto(f"{site}/index.html")
        browser.close()
    claim = {
        "task": "Open the test site's index page.",
        "output": "I opened the index page.",
        "data": {"opened": True},
        "judge": True,
        "judge_context": ["The test site's index page is /index.html."],
    }
    finishing = api.http.post(f"/browsers/{session['id']}/finish", json=claim)
    assert finishing.status_code == 200 and finishing.json()["status"] == "stopping", finishing.text
    again = api.http.post(f"/browsers/{session['id']}/finish", json=claim)
    assert again.status_code == 409

    ended = api.wait_for(session["id"], ("stopped", "failed"))
    assert ended["stop_reason"] == "finished" and ended["run_id"]
    run = Run.objects.get(public_id=ended["run_id"])
    assert (run.task, run.output, run.data, run.status) == (
        claim["task"],
        claim["output"],
        {"opened": True},
        "succeeded",
    )
    judged = wait_for(lambda: Event.objects.filter(run=run, type="run.judged").first(), timeout=60)
    assert judged.payload["verdict"] == "pass", judged.payload
    request = user_text(messages_stub.requests_for(JUDGE_QUEUE)[-1])
    assert claim["task"] in request and claim["output"] in request and claim["judge_context"][0] in request
    assert f"{site}/index.html" in request, "the timeline's navigation is a step the judge reads"
