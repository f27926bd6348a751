"""The worker side of take control, with real Chromium, Redis and the channel layer: the process's one listener
serves several runs at once, applies each run's input to that run's page only, and answers every input (applied, or
why not) to the socket that sent it; a new viewer's request brings the current frame of a page that changes nothing."""

import asyncio
import time

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from runs.live import control_group, live_group, mark_watched
from runtime.browser import control
from runtime.browser.live_view import LiveView
from tests.support import browsers
from tests.support.browsers import call, make_toolset

host = browsers.host  # the module's browser host (a fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def two_pages(host, site):
    """Two runs' pages in this process's browser host, each with its dispatcher (accepting input)."""
    opened = {}
    for name in ("alpha", "bravo"):
        toolset = make_toolset(host)
        call(host, toolset, "navigate", url=f"{site}/control.html")
        run_id = f"run_{name}{time.monotonic_ns()}"
        dispatcher = control.attach(host, run_id, toolset.active_page, accepting=True)
        assert dispatcher is not None
        opened[name] = (run_id, toolset, dispatcher)
    yield opened
    for _run_id, toolset, dispatcher in opened.values():
        dispatcher.stop()
        host.run(toolset.close(), timeout=30)


def send_inputs(run_id: str, inputs: list[dict]) -> list[dict]:
    """Send numbered inputs to the run's control group as the live socket does, and return the answers."""
    layer = get_channel_layer()

    async def exchange() -> list[dict]:
        reply_to = await layer.new_channel()
        group = control_group(run_id)
        for number, content in enumerate(inputs, start=1):
            message = {"type": "control.input", "group": group, "input": content, "id": number, "reply_to": reply_to}
            await layer.group_send(group, message)
        return [await asyncio.wait_for(layer.receive(reply_to), 10) for _ in inputs]

    return async_to_sync(exchange)()


def field_value(host, toolset) -> str:
    return host.run(toolset.active_page().input_value("#name"), timeout=10)


def test_each_runs_input_reaches_its_own_page_only_and_every_input_is_answered(host, two_pages):
    for name, (run_id, _toolset, _dispatcher) in two_pages.items():
        answers = send_inputs(
            run_id,
            [
                {"kind": "mouse", "action": "click", "x": 250, "y": 120, "button": "left"},
                {"kind": "text", "text": name},
            ],
        )
        assert answers == [
            {"type": "control.ack", "id": 1, "ok": True, "reason": ""},
            {"type": "control.ack", "id": 2, "ok": True, "reason": ""},
        ]
    for name, (_run_id, toolset, dispatcher) in two_pages.items():
        assert field_value(host, toolset) == name
        assert dispatcher.applied == 2


def test_input_while_the_agent_acts_is_answered_with_why_and_applied_nowhere(host, two_pages):
    run_id, toolset, dispatcher = two_pages["alpha"]
    dispatcher.accepting.clear()

    answers = send_inputs(run_id, [{"kind": "text", "text": "too soon"}, {"kind": "eval", "code": "alert(1)"}])

    assert answers == [
        {"type": "control.ack", "id": 1, "ok": False, "reason": "agent_acting"},
        {"type": "control.ack", "id": 2, "ok": False, "reason": "invalid"},
    ]
    assert field_value(host, toolset) == ""
    dispatcher.accepting.set()
    assert send_inputs(run_id, [{"kind": "probe"}]) == [{"type": "control.ack", "id": 1, "ok": True, "reason": ""}]


def test_a_new_viewer_of_a_page_that_changes_nothing_gets_its_frame(host, site):
    toolset = make_toolset(host)
    call(host, toolset, "navigate", url=f"{site}/control.html")
    run_id = f"run_still{time.monotonic_ns()}"
    view = LiveView(host, toolset, run_id)
    layer = get_channel_layer()

    async def frames_after_asking(count: int) -> list[dict]:
        channel = await layer.new_channel()
        await layer.group_add(live_group(run_id), channel)
        received = []
        for _ in range(count):
            # what the live socket does when it connects: present, then a request for the current frame
            await asyncio.get_running_loop().run_in_executor(None, mark_watched, run_id)
            group = control_group(run_id)
            await layer.group_send(group, {"type": "live.wanted", "group": group})
            received.append(await asyncio.wait_for(layer.receive(channel), 10))
        await layer.group_discard(live_group(run_id), channel)
        return received

    try:
        first, second = async_to_sync(frames_after_asking)(2)
    finally:
        view.stop()
        host.run(toolset.close(), timeout=30)
    # The second request finds the screencast going and a page that sent nothing since: the same picture again.
    assert first["type"] == second["type"] == "live.frame"
    assert first["url"].endswith("/control.html") and second["jpeg"] == first["jpeg"]
