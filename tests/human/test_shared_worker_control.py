"""Take control when runs share a worker process, in real Chromium against Daphne and one real worker: two paused runs
each take the keys typed into their own run page's live view and only those; one of four concurrent runs is taken
over while its question is pending, each keystroke shows in the live picture, and the question is answered after;
a second viewer of a waiting run gets the current frame at once."""

import json
import os
import re
import threading

import pytest
from playwright.sync_api import expect

from runs.models import Run
from scripted_api.stub import AGENT_QUEUE, default_route
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import launching, live, workers
from tests.support.launching import events, finished, launch_through_api, wait_for
from tests.support.live import frames_shown, on_the_live_picture, signed_in_page, slow
from tests.support.replies import HeldReply, browser, done, last_tool_result_text

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker
launches_held = launching.launches_held
asgi_server = live.asgi_server
chromium = live.chromium

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the ORM beside Playwright's sync API in this thread

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("runtime_worker", "transactional_db", "launches_held"),
]

# Where tests/pages/control.html and typing.html put their field (CSS pixels of the agent's viewport).
NAME_FIELD = (250, 120)
FRAME_TIMEOUT_MS = 45_000


def by_task(request: dict) -> str:
    """Each run's agent requests go to the queue its task names ("[A] ..." to queue A)."""
    queue = default_route(request)
    if queue != AGENT_QUEUE:
        return queue
    found = re.search(r"\[(\w)\] ", json.dumps(request["messages"][0]["content"]))
    return found.group(1) if found else queue


def run_page(chromium, asgi_server: str, alice, run: Run):
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    return page


def take_control(page) -> None:
    """Press Take control on the run page and wait for the live view to take input, with a picture to aim at."""
    page.locator("#pause-form button").click()
    expect(page.locator("#resume-form")).to_be_visible(timeout=20_000)
    expect(page.locator("#live-view")).to_have_class(re.compile(r"\binteractive\b"), timeout=20_000)
    page.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 1",
                           timeout=FRAME_TIMEOUT_MS)  # fmt: skip


def acked(page) -> int:
    return int(page.evaluate("Number(document.getElementById('live-view').dataset.acked || 0)"))


def type_on_the_live_view(page, text: str) -> None:
    """Click the page's field through the live picture, type `text` and press Enter; return once the worker
    acknowledged every input as applied."""
    page.locator("#live-img").scroll_into_view_if_needed()
    page.mouse.click(*on_the_live_picture(page, *NAME_FIELD))
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    inputs = 2 + len(text) + 1  # the press and release, each character, Enter (moves may add more)
    # Each answer comes within a second on a quiet machine; a loaded one may take longer, and the page then says so
    # until the answer comes.
    page.wait_for_function(f"Number(document.getElementById('live-view').dataset.acked || 0) >= {inputs}",
                           timeout=30_000)  # fmt: skip
    assert not page.locator("#control-status").is_visible(), page.locator("#control-status").text_content()


def test_two_paused_runs_on_one_worker_each_take_only_their_own_keys(
    api, asgi_server, chromium, site, alice, messages_stub, runtime_worker
):
    messages_stub.route = by_task
    names = {"A": "alpha", "B": "bravo"}
    # Each run's first reply is held until the person took control of it: its turn then finishes, and the agent
    # waits for the hand-back.
    held = {name: HeldReply(browser("get_page_text")) for name in names}
    for name in names:
        messages_stub.enqueue(held[name], browser("get_page_text"), done(True, "Done."), queue=name)
    runs = {
        name: launch_through_api(api, task=f"[{name}] Look at the page.", start_url=f"{site}/control.html")
        for name in names
    }
    for name in names:
        wait_for(held[name].arrived.is_set, timeout=60, message=f"run {name}'s first request")
    pages = {name: run_page(chromium, asgi_server, alice, run) for name, run in runs.items()}

    for name, page in pages.items():
        take_control(page)
        held[name].release.set()
    for run in runs.values():
        wait_for(lambda run=run: events(run, "agent.tool_result"), timeout=30, message="the agent's turn to finish")
    runs = {name: Run.objects.get(pk=run.pk) for name, run in runs.items()}
    assert all(run.is_paused and run.worker == runtime_worker.name for run in runs.values()), "both on one worker"

    for name, page in pages.items():
        type_on_the_live_view(page, names[name])
    for name, page in pages.items():
        page.fill("#resume-note", f"I typed {names[name]}.")
        page.locator("#resume-form button").click()

    for name, run in runs.items():
        run = finished(run)
        assert run.status == Run.Status.SUCCEEDED, run.error_message
        requests = messages_stub.requests_for(name)
        assert len(requests) == 3
        page_text = last_tool_result_text(requests[2])
        other = next(word for other, word in names.items() if other != name)
        assert f"entered {names[name]}" in page_text and other not in page_text, page_text
    # What the people typed is on the pages, never in the worker's log.
    log = runtime_worker.log_path.read_text(errors="replace")
    assert "alpha" not in log and "bravo" not in log
    assert "Two event loops" not in log


def ask_human(question: str) -> dict:
    return tool_use_reply("ask_human", {"question": question, "secret": False})


def test_control_while_the_question_is_pending_shows_each_keystroke_and_the_question_is_answered_after(
    api, asgi_server, chromium, site, alice, messages_stub
):
    messages_stub.route = by_task
    busy = threading.Event()
    busy.set()

    def busy_agent(request: dict) -> dict:
        # The other three runs keep the worker's other threads at work until the test is done with run A.
        return slow(browser("get_page_text"), 1)(request) if busy.is_set() else done(True, "Done.")

    for name in "BCD":
        messages_stub.set_fallback(busy_agent, queue=name)
    messages_stub.enqueue(ask_human("Which name should I type?"), browser("get_page_text"), done(True, "Done."),
                          queue="A")  # fmt: skip
    asking = launch_through_api(api, task="[A] Type a name.", start_url=f"{site}/typing.html")
    others = [
        launch_through_api(api, task=f"[{name}] Read the page.", start_url=f"{site}/index.html", max_turns=200)
        for name in "BCD"
    ]
    try:
        page = run_page(chromium, asgi_server, alice, asking)
        expect(page.locator("#question")).to_have_text("Which name should I type?", timeout=60_000)
        # four at once: on a loaded machine the last of the others may still be starting when A asks
        wait_for(lambda: all(Run.objects.get(pk=run.pk).status == Run.Status.RUNNING for run in others),
                 timeout=60, message="the other three runs running beside A")  # fmt: skip

        take_control(page)
        expect(page.locator("#answer-form")).to_be_visible()  # the question waits

        page.locator("#live-img").scroll_into_view_if_needed()
        page.mouse.click(*on_the_live_picture(page, *NAME_FIELD))
        typed = ""
        for key in "ada":
            before, inputs = frames_shown(page), acked(page)
            page.keyboard.type(key)
            typed += key
            page.wait_for_function(f"Number(document.getElementById('live-view').dataset.acked || 0) > {inputs}",
                                   timeout=20_000)  # fmt: skip
            # The picture follows the keystroke: a new frame shows the page with it (the page puts its field's
            # value in its URL, which each frame carries).
            expect(page.locator("#live-caption")).to_have_text(re.compile(rf"#typed={typed}$"), timeout=20_000)
            assert frames_shown(page) > before
        # every keystroke was answered: a "no answer yet" warning a slow answer raised is cleared by the answer
        expect(page.locator("#control-status")).to_be_hidden(timeout=10_000)

        page.fill("#answer-text", "Ada")
        page.locator("#answer-form button").click()
        expect(page.locator("#answer-form")).to_have_count(0, timeout=20_000)
        page.locator("#resume-form button").click()
        asking = finished(asking)
    finally:
        busy.clear()
    assert asking.status == Run.Status.SUCCEEDED, asking.error_message
    requests = messages_stub.requests_for("A")
    assert last_tool_result_text(requests[1]) == "The operator answered:\nAda"
    for run in others:
        assert finished(run).status == Run.Status.SUCCEEDED


def test_a_second_viewer_of_a_waiting_run_gets_its_frame(api, asgi_server, chromium, site, alice, messages_stub):
    messages_stub.agent(ask_human("Anything else?"), done(True, "Done."))
    run = launch_through_api(api, start_url=f"{site}/control.html")
    first = run_page(chromium, asgi_server, alice, run)
    expect(first.locator("#question")).to_be_visible(timeout=60_000)
    first.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 1",
                            timeout=FRAME_TIMEOUT_MS)  # fmt: skip

    # The page waits and changes nothing: the screencast has nothing new to send, and still a second viewer (and the
    # first one again) gets the picture.
    second = run_page(chromium, asgi_server, alice, run)
    second.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 1",
                             timeout=FRAME_TIMEOUT_MS)  # fmt: skip
    assert second.locator("#live-caption").text_content().endswith("/control.html")
    expect(second.locator("#live-img")).to_have_attribute("src", re.compile(r"^data:image/jpeg;base64,"))

    api.post(f"/runs/{run.public_id}/input", {"id": api.get(f"/runs/{run.public_id}").json()["pending_input"]["id"],
                                              "text": "No."})  # fmt: skip
    assert finished(run).status == Run.Status.SUCCEEDED
