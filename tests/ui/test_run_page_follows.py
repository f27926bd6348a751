"""A run page follows its run without a reload, in real Chromium against Daphne and a real worker: opened while the run
is queued it offers no Take control, offers it once the run runs, and once the run has ended it offers no control
the server would refuse (answer, message, pause, hand back, cancel, save), the follow-up card no longer waits for
the run, and Make recipe appears."""

import os

import pytest
from playwright.sync_api import expect

from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support import live
from tests.support.clients import ApiClient
from tests.support.launching import enqueue, finished, launches_held
from tests.support.live import open_subscribed, signed_in_page, slow
from tests.support.replies import browser, done

asgi_server = live.asgi_server
chromium = live.chromium
messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
launches_held = launches_held

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The person-in-the-loop and lifecycle endpoints: each refuses a run that has ended.
REFUSED_AFTER_THE_END = ["/answer/", "/message/", "/pause/", "/resume/", "/cancel/", "/save/"]
SHOWN_FORMS = """(paths) => [...document.querySelectorAll("form")]
  .filter((form) => form.offsetParent !== null && !form.closest("[hidden]"))
  .map((form) => new URL(form.action).pathname)
  .filter((path) => paths.some((end) => path.endsWith(end)))"""


def test_a_run_watched_to_its_end_keeps_no_control_the_server_would_refuse(
    launches_held, celery_worker, messages_stub, asgi_server, chromium, alice, acme_key, site
):
    messages_stub.agent(slow(browser("get_page_text"), 3), slow(done(True, "The page says hello."), 1))
    launched = ApiClient(acme_key).post("/runs", {"task": "Read the page.", "start_url": f"{site}/control.html"})
    assert launched.status_code == 201, launched.content
    run = Run.objects.get(public_id=launched.json()["id"])
    page = signed_in_page(chromium, asgi_server, alice)
    open_subscribed(page, f"{asgi_server}/runs/{run.public_id}/", ready="caught_up")
    page.evaluate("window.openedOnce = true")  # gone if the page were reloaded

    expect(page.locator("#message-form")).to_be_visible()  # a queued run takes messages
    expect(page.locator("#pause-form")).to_be_hidden()
    expect(page.locator("#follow-up")).to_contain_text("it waits for this run to end")

    enqueue(run, queue="runs")
    expect(page.locator("#pause-form button")).to_be_visible(timeout=30000)
    expect(page.locator("#make-recipe")).to_have_count(0)

    run = finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    expect(page.locator("#make-recipe summary")).to_be_visible(timeout=15000)
    assert page.evaluate(SHOWN_FORMS, REFUSED_AFTER_THE_END) == []
    expect(page.locator("#person")).to_be_hidden()
    expect(page.locator("#follow-up")).not_to_contain_text("waits for this run")
    expect(page.locator("#run-files")).not_to_contain_text(" yet.")
    assert page.evaluate("window.openedOnce") is True
    page.context.close()
