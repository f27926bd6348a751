"""Hostile content shown as text everywhere (list, run page, live viewer, admin), and no secret in events, logs,
responses or pages: one real run through the worker against a page whose title and text carry markup."""

import os

import pytest
from django.test import Client
from django.urls import reverse
from playwright.sync_api import expect

from agent_platform.models import ApiKey
from runs.models import Event, Run
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import sites, workers
from tests.support.canaries import CANARY_ANTHROPIC_KEY, HOSTILE, dumped
from tests.support.clients import ApiClient
from tests.support.launching import finished
from tests.support.live import asgi_server, chromium, emit, signed_in_page  # noqa: F401  (fixtures)
from tests.support.replies import browser, done
from tests.support.sites import site_url
from tests.support.workers import FAULT_QUEUE

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_worker = workers.fault_worker
fault_site = sites.fault_site

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API holds an event loop here

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ESCAPED_SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"


@pytest.fixture
def hostile_run(acme, fault_worker, fault_site, messages_stub, monkeypatch):
    """A finished run launched through the API whose page title and text, agent message, output and data carry
    markup; returns the run and the API key that launched it."""
    from runs import tasks

    monkeypatch.setattr(
        tasks.execute_run, "delay", lambda pk, **_fair: tasks.execute_run.apply_async(args=[pk], queue=FAULT_QUEUE)
    )
    key = ApiKey.issue(acme, name="hostile")[1]
    messages_stub.agent(
        tool_use_reply("get_page_text", {}, toolset_name="browser", text=f"Reading {HOSTILE}"),
        browser("read_page"),
        done(True, HOSTILE, data={"name": HOSTILE}),
    )
    response = ApiClient(key).post(
        "/runs", {"task": f"Summarise {HOSTILE}", "start_url": f"{site_url(fault_site)}/hostile.html"}
    )
    assert response.status_code == 201
    run = finished(Run.objects.get(public_id=response.json()["id"]))
    assert run.status == Run.Status.SUCCEEDED
    return run, key


def assert_shown_as_text(html: str, where: str) -> None:
    assert "<script>alert(1)" not in html, where
    assert "<img src=x onerror" not in html, where
    assert ESCAPED_SCRIPT in html, f"the hostile text should be shown, escaped, on the {where}"


def test_markup_is_text_everywhere_and_no_secret_leaks(hostile_run, alice, acme, fault_worker):
    run, key = hostile_run
    payloads = dumped([event.as_dict() for event in Event.objects.filter(run=run)])
    assert HOSTILE in payloads  # the record keeps what happened, verbatim: escaping is the views' job
    alice.is_staff = alice.is_superuser = True
    alice.save()
    staff = Client()
    staff.force_login(alice)
    pages = {
        "runs list": staff.get("/"),
        "run page": staff.get(f"/runs/{run.public_id}/"),
        "run row": staff.get(f"/runs/{run.public_id}/row/"),
        "run summary": staff.get(f"/runs/{run.public_id}/summary/"),
        "session page": staff.get(f"/sessions/{run.session.public_id}/"),
        "admin runs": staff.get(reverse("admin:runs_run_changelist")),
        "admin run": staff.get(reverse("admin:runs_run_change", args=[run.pk])),
        "admin events": staff.get(reverse("admin:runs_event_changelist") + f"?run__id__exact={run.pk}"),
    }
    for where, response in pages.items():
        assert response.status_code == 200, where
        html = response.content.decode()
        assert "<script>alert(1)" not in html and "<img src=x onerror" not in html, where
    for where in ("runs list", "run page", "admin runs"):
        assert_shown_as_text(pages[where].content.decode(), where)

    api = ApiClient(key)
    exposed = {
        "events": payloads,
        "worker log": fault_worker.log_path.read_text(errors="replace"),
        "run response": api.get(f"/runs/{run.public_id}").content.decode(),
        "events response": api.get(f"/runs/{run.public_id}/events").content.decode(),
        "usage response": api.get("/usage").content.decode(),
        **{where: response.content.decode() for where, response in pages.items()},
    }
    key_secret = key.split("_", 2)[2]
    for where, text in exposed.items():
        assert CANARY_ANTHROPIC_KEY not in text, f"ANTHROPIC_API_KEY appears in the {where}"
        assert key_secret not in text, f"the API key appears in the {where}"


def test_the_live_viewer_shows_markup_as_text_and_runs_none_of_it(hostile_run, asgi_server, chromium, alice, acme):  # noqa: F811
    run, _ = hostile_run
    page = signed_in_page(chromium, asgi_server, alice)
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    page.goto(f"{asgi_server}/")
    expect(page.locator(f"#row-{run.public_id}")).to_contain_text(f"Summarise {HOSTILE}")
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    expect(page.locator("#run-output")).to_have_text(HOSTILE)
    expect(page.locator("#timeline")).to_contain_text(f"Reading {HOSTILE}")
    expect(page.locator("#timeline")).to_contain_text("alert(2)")  # the page's text, as the agent read it
    # Live: events pushed while the page is open go through the same text-only rendering.
    page.wait_for_function("window.Pilothouse && window.Pilothouse.runSocket.socket.readyState === 1")
    emit(run, "agent.message", {"text": f"live {HOSTILE}", "turn": 9})
    emit(run, "agent.tool_result", {"tool_use_id": "t", "name": "navigate", "content": f"Title: {HOSTILE}",
                                    "notices": [f"[notice] {HOSTILE}"], "is_error": False, "url": HOSTILE})  # fmt: skip
    expect(page.locator("#timeline")).to_contain_text(f"live {HOSTILE}")
    expect(page.locator("#timeline")).to_contain_text(f"Title: {HOSTILE}")
    # The proof is structural: the markup became text, so no element exists whose handler could ever fire.
    assert page.locator("#timeline img[src='x'], #summary img[src='x'], #timeline script").count() == 0
    assert dialogs == []
    page.context.close()
