"""The operator UI in real Chromium against a live ASGI server (Daphne) that speaks websockets, with the real worker
and the Messages stub: launch from the form, watch the run grow live, resume after a dropped socket, lint before
spend, refuse other workspaces, and show outside text as text."""

import os
import time

import pytest
from django.db import connection
from playwright.sync_api import expect

from runs.models import Run
from runs.views import PAGE_SIZE
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import live
from tests.support.factories import make_run, make_session
from tests.support.judging import judgment_reply
from tests.support.launching import wait_for
from tests.support.live import emit, signed_in_page, slow
from tests.support.replies import browser as browser_action

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
asgi_server = live.asgi_server
chromium = live.chromium

# Playwright's sync API keeps an event loop on this thread; the ORM calls between its calls are still synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCRIPT = "<script>window.pwned=1</script>"


def dom_seqs(page) -> list[int]:
    return page.eval_on_selector_all("#timeline [data-seq]", "nodes => nodes.map(n => Number(n.dataset.seq))")


@pytest.mark.worker
def test_launch_from_the_form_and_watch_the_run_live(
    messages_stub_server, celery_worker, messages_stub, asgi_server, chromium, alice, acme
):
    messages_stub.agent(
        slow(browser_action("get_page_text")),
        slow(
            tool_use_reply(
                "done",
                {"success": True, "output": "Two products listed.",
                 "data": {"items": [{"name": "Cedar Notebook", "price": 12.5}, {"name": "Brass Pen", "price": 30}]}},
            )
        ),
    )  # fmt: skip
    messages_stub.judge(judgment_reply("pass", "The output lists the products with the prices shown on the page."))
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/new/")
    page.get_by_role("button", name="Demo shop: list first-page products (judged)").click()
    expect(page.locator("#schema-lint")).to_contain_text("Schema accepted")
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(f"{asgi_server}/runs/run_*/")
    run = Run.objects.get(workspace=acme)
    assert run.judge is True

    # An event arrives over the socket while the run is still running.
    page.wait_for_selector('#timeline [data-type="agent.tool_use"]', timeout=30000)
    assert page.locator('#timeline [data-type="run.finished"]').count() == 0
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING

    page.wait_for_selector('#timeline [data-type="run.finished"]', timeout=60000)
    expect(page.locator("#run-status")).to_have_text("succeeded")
    expect(page.locator("#verdict")).to_contain_text("Two products listed.")
    expect(page.locator("#data-table")).to_contain_text("Cedar Notebook")
    expect(page.locator("#judgments")).to_contain_text("The output lists the products", timeout=60000)
    expect(page.locator("#judgments .badge.v-pass").first).to_be_visible()
    page.wait_for_selector('#timeline [data-type="run.judged"]')
    last = Run.objects.get(pk=run.pk).last_seq
    wait_for(lambda: len(dom_seqs(page)) == last, timeout=10, message="every event in the timeline")
    assert dom_seqs(page) == list(range(1, last + 1))
    assert page.locator("#filmstrip img").count() >= 1
    page.context.close()


def test_a_dropped_socket_resumes_with_every_event_exactly_once(asgi_server, chromium, alice, acme):
    run = make_run(acme, status=Run.Status.RUNNING, max_turns=8)
    emit(run, "run.started", {"model": run.model, "max_turns": 8, "scripted": False})
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    page.wait_for_function("window.Pilothouse && window.Pilothouse.runSocket.socket.readyState === 1")
    emit(run, "agent.message", {"text": "turn one", "turn": 1})
    page.wait_for_selector('[data-seq="2"]')

    page.evaluate("window.Pilothouse.runSocket.drop()")
    expect(page.locator("#connection-banner")).to_contain_text("Connection lost")
    for turn in range(2, 8):  # written while the viewer is away: they must come from the backlog
        emit(
            run,
            "agent.tool_use",
            {"id": f"t{turn}", "name": "find", "toolset": "browser", "input": {"query": "x"}, "turn": turn},
        )
    expect(page.locator("#connection-banner")).to_contain_text("back", timeout=10000)
    emit(run, "agent.message", {"text": "after the reconnect", "turn": 8})
    page.wait_for_selector('[data-seq="9"]')
    assert dom_seqs(page) == list(range(1, 10))
    # The turn-budget bar went amber past 75% of max_turns (7 of 8 action turns).
    assert "warn" in page.get_attribute("#budget", "class")
    page.context.close()


def test_schema_lint_errors_show_before_submit(asgi_server, chromium, alice, acme):
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/new/")
    editor = page.locator("#id_output_schema")
    submit = page.get_by_role("button", name="Launch run")
    editor.fill('{"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}}')
    expect(page.locator("#schema-lint")).to_contain_text("$.properties.url.format")
    expect(submit).to_be_disabled()
    editor.fill('{"type": "array"}')
    expect(page.locator("#schema-lint")).to_contain_text("the root must be an object schema")
    editor.fill('{"type": "object", "properties": {"a": {"type": "nonsense"}}}')
    expect(page.locator("#schema-lint")).to_contain_text("not a valid JSON Schema")  # only the server knows this
    expect(submit).to_be_disabled()
    editor.fill('{"type": "object", "description": "' + "x" * 8200 + '"}')
    expect(page.locator("#schema-lint")).to_contain_text("the limit is 8192 bytes")
    editor.fill("{nope")
    expect(page.locator("#schema-lint")).to_contain_text("not valid JSON")
    editor.fill('{"type": "object", "properties": {"title": {"type": "string"}}}')
    expect(page.locator("#schema-lint")).to_contain_text("Schema accepted")
    expect(submit).to_be_enabled()
    assert not Run.objects.exists()

    session = make_session(acme, output_schema={"type": "object", "properties": {"items": {"type": "array"}}})
    page.goto(f"{asgi_server}/runs/new/?session={session.public_id}")
    expect(page.locator("#inherited-schema")).to_contain_text('"items"')
    page.locator("#id_output_schema").fill('{"type": "object"}')
    expect(page.locator("#schema-conflict")).to_contain_text("conflict")
    expect(page.get_by_role("button", name="Launch run")).to_be_disabled()
    page.context.close()


def test_another_workspace_cannot_open_the_page_or_the_socket(asgi_server, chromium, charlie, acme):
    run = make_run(acme, task="Acme's private task")
    emit(run, "agent.message", {"text": "acme secret", "turn": 1})
    page = signed_in_page(chromium, asgi_server, charlie)
    response = page.goto(f"{asgi_server}/runs/{run.public_id}/")
    assert response.status == 404
    assert "Acme's private task" not in page.content()
    page.goto(f"{asgi_server}/")
    outcome = page.evaluate(
        """runId => new Promise(resolve => {
            const messages = [];
            const socket = new WebSocket(`ws://${location.host}/ws/runs/${runId}/`);
            socket.onmessage = m => messages.push(m.data);
            socket.onclose = e => resolve({code: e.code, messages});
        })""",
        run.public_id,
    )
    assert outcome == {"code": 4404, "messages": []}
    page.context.close()


def test_script_in_page_text_and_model_output_renders_as_text_everywhere(asgi_server, chromium, alice, acme):
    run = make_run(acme, task=f"Summarise {SCRIPT}", status=Run.Status.RUNNING)
    emit(run, "agent.message", {"text": f"server-rendered {SCRIPT}", "turn": 1})
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/")
    expect(page.locator(f"#row-{run.public_id}")).to_contain_text(SCRIPT)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    page.wait_for_function("window.Pilothouse && window.Pilothouse.runSocket.socket.readyState === 1")
    emit(run, "agent.message", {"text": f"live {SCRIPT}", "turn": 2})
    emit(run, "agent.tool_use", {"id": "t", "name": "navigate", "input": {"url": SCRIPT}, "turn": 2})
    emit(run, "agent.tool_result", {"tool_use_id": "t", "name": "navigate", "content": f"Title: {SCRIPT}\n[notice] {SCRIPT}", "is_error": True, "url": SCRIPT})  # fmt: skip
    Run.objects.filter(pk=run.pk).update(status="succeeded", success=True, output=SCRIPT, data={"x": SCRIPT})
    emit(run, "run.finished", {"status": "succeeded", "success": True, "error_code": None, "error_message": SCRIPT})
    expect(page.locator("#data-raw-json")).to_contain_text(SCRIPT)
    expect(page.locator("#run-task")).to_contain_text(SCRIPT)
    expect(page.locator('[data-seq="2"]')).to_contain_text(f"live {SCRIPT}")
    expect(page.locator('[data-seq="4"] .line.notice')).to_have_text(f"[notice] {SCRIPT}")
    expect(page.locator("#run-output")).to_have_text(SCRIPT)
    assert page.evaluate("window.pwned") is None
    assert page.locator("#timeline script, #summary script").count() == 0
    page.context.close()


def wait_until_subscribed(page, frames: list[str]) -> None:
    """The list socket says when it has joined the workspace's group: only changes after that can reach the page."""
    deadline = time.monotonic() + 30
    while not any('"subscribed"' in frame for frame in frames):
        assert time.monotonic() < deadline, "the runs list's socket never subscribed"
        page.wait_for_timeout(50)  # lets Playwright deliver the socket's frames


def test_runs_list_rows_update_live_and_new_runs_appear(asgi_server, chromium, alice, acme):
    run = make_run(acme, task="A row that will start")
    page = signed_in_page(chromium, asgi_server, alice)
    frames: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda frame: frames.append(str(frame))))
    page.goto(f"{asgi_server}/")
    expect(page.locator(f"#row-{run.public_id} .badge").first).to_have_text("queued")
    expect(page.locator("#runs-count")).to_have_text("1 run")
    page.wait_for_function("document.querySelector('#runs-body') && window.Pilothouse")
    wait_until_subscribed(page, frames)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    emit(run, "run.started", {"model": run.model, "max_turns": 30, "scripted": False})
    expect(page.locator(f"#row-{run.public_id} .badge").first).to_have_text("running")
    newcomer = make_run(acme, task=f"A newcomer {SCRIPT}")
    emit(newcomer, "run.started", {"model": newcomer.model, "max_turns": 30, "scripted": False})
    expect(page.locator(f"#row-{newcomer.public_id}")).to_contain_text(f"A newcomer {SCRIPT}")
    assert page.locator("#runs-body tr").first.get_attribute("id") == f"row-{newcomer.public_id}"
    expect(page.locator("#runs-count")).to_have_text("2 runs")  # the heading's count follows the list
    assert page.evaluate("window.pwned") is None
    page.context.close()
    # The ORM calls made here, between Playwright's, had a connection a fixture's teardown cannot reach: close it, or
    # it outlives the test database and the session's teardown fails ("being accessed by other users").
    connection.close()


def test_runs_list_pager_follows_the_count_when_a_new_run_makes_a_second_page(asgi_server, chromium, alice, acme):
    session = make_session(acme)
    for index in range(PAGE_SIZE):
        make_run(acme, session=session, task=f"A run of a full page {index}")
    page = signed_in_page(chromium, asgi_server, alice)
    frames: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda frame: frames.append(str(frame))))
    page.goto(f"{asgi_server}/")
    expect(page.locator("#runs-count")).to_have_text(f"{PAGE_SIZE} runs")
    expect(page.locator("#runs-pager")).to_be_hidden()  # one page: no pager
    page.wait_for_function("document.querySelector('#runs-body') && window.Pilothouse")
    wait_until_subscribed(page, frames)
    # The last row shown: the oldest, in the list's own order (runs made in one loop may share a timestamp).
    oldest = page.locator("#runs-body tr[data-run-id]").last.get_attribute("data-run-id")

    newcomer = make_run(acme, task="The run that starts a second page")
    emit(newcomer, "run.started", {"model": newcomer.model, "max_turns": 30, "scripted": False})
    expect(page.locator(f"#row-{newcomer.public_id}")).to_be_visible()
    expect(page.locator("#runs-count")).to_have_text(f"{PAGE_SIZE + 1} runs")
    expect(page.locator("#runs-pages")).to_have_text("Page 1 of 2")
    expect(page.locator("#runs-older")).to_be_visible()
    # The first page keeps the newest PAGE_SIZE runs: the oldest went to the second page, where the link leads.
    expect(page.locator("#runs-body tr[data-run-id]")).to_have_count(PAGE_SIZE)
    expect(page.locator(f"#row-{oldest}")).to_have_count(0)
    page.locator("#runs-older").click()
    expect(page.locator(f"#row-{oldest}")).to_be_visible()
    expect(page.locator("#runs-pages")).to_have_text("Page 2 of 2")
    page.context.close()
    connection.close()


def test_a_run_that_changes_on_a_later_page_stays_off_the_first(asgi_server, chromium, alice, acme):
    session = make_session(acme)
    for index in range(PAGE_SIZE + 1):
        make_run(acme, session=session, task=f"A run of a page and one more {index}")
    # The one run on the second page, in the list's own order.
    farthest = Run.objects.filter(workspace=acme).order_by("-created_at", "-id").last()
    page = signed_in_page(chromium, asgi_server, alice)
    frames: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda frame: frames.append(str(frame))))
    page.goto(f"{asgi_server}/")
    expect(page.locator("#runs-pages")).to_have_text("Page 1 of 2")
    page.wait_for_function("document.querySelector('#runs-body') && window.Pilothouse")
    wait_until_subscribed(page, frames)

    with page.expect_response(lambda response: f"/{farthest.public_id}/" in response.url):
        emit(farthest, "run.started", {"model": farthest.model, "max_turns": 30, "scripted": False})
    # A newcomer after it: once its row is in, the far run's answer has been handled as well.
    newcomer = make_run(acme, task="The run that comes after")
    emit(newcomer, "run.started", {"model": newcomer.model, "max_turns": 30, "scripted": False})
    expect(page.locator(f"#row-{newcomer.public_id}")).to_be_visible()
    expect(page.locator(f"#row-{farthest.public_id}")).to_have_count(0)
    expect(page.locator("#runs-body tr[data-run-id]")).to_have_count(PAGE_SIZE)
    expect(page.locator("#runs-body tr[data-run-id]").first).to_have_attribute("data-run-id", newcomer.public_id)
    page.context.close()
    connection.close()
