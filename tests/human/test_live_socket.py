"""The live socket's input, in process: only a member's socket on a run that accepts control forwards input to the
worker's control group, cleaned and numbered, and the worker's answer comes back to that socket; anything else is
refused and forwards nothing. A new viewer asks the worker for the current frame."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from runs.consumers import CLOSE_NOT_FOUND
from runs.live import control_group, control_input
from runs.models import Run
from runs.routing import websocket_urlpatterns
from tests.support.factories import make_run

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def communicator(user, run: Run) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.public_id}/live/")
    socket.scope["user"] = user
    return socket


async def listening(run: Run) -> tuple:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(control_group(run.public_id), channel)
    return layer, channel


async def nothing_arrives(layer, channel) -> bool:
    try:
        await asyncio.wait_for(layer.receive(channel), 0.5)
    except TimeoutError:
        return True
    return False


async def test_a_members_input_reaches_the_control_group_only_while_the_run_accepts_control(bob, acme):
    run = await database_sync_to_async(make_run)(acme, status=Run.Status.RUNNING)
    layer, channel = await listening(run)
    socket = communicator(bob, run)
    assert (await socket.connect())[0]
    assert (await socket.receive_json_from(timeout=5))["type"] == "watching"
    # A new viewer asks the worker for the current frame: a paused page would send none.
    asked = await asyncio.wait_for(layer.receive(channel), 5)
    assert asked == {"type": "live.wanted", "group": control_group(run.public_id)}

    await socket.send_json_to({"type": "input", "id": 1, "kind": "text", "text": "too early"})
    assert await socket.receive_json_from(timeout=5) == {"type": "input_refused", "id": 1, "reason": "not_in_control"}
    assert await nothing_arrives(layer, channel)

    await database_sync_to_async(Run.objects.filter(pk=run.pk).update)(paused_at=timezone.now())
    await asyncio.sleep(1.1)  # the socket trusts its last reading for a second
    await socket.send_json_to(
        {"type": "input", "id": 2, "kind": "mouse", "action": "click", "x": 10, "y": 20, "extra": "dropped"}
    )
    message = await asyncio.wait_for(layer.receive(channel), 5)
    reply_to = message.pop("reply_to")
    assert message == {
        "type": "control.input",
        "group": control_group(run.public_id),
        "id": 2,
        "input": {"kind": "mouse", "action": "click", "x": 10.0, "y": 20.0, "button": "left"},
    }
    # The worker's answer goes to this socket's own channel, and reaches the page with the input's number.
    await layer.send(reply_to, {"type": "control.ack", "id": 2, "ok": False, "reason": "agent_acting"})
    assert await socket.receive_json_from(timeout=5) == {
        "type": "input_ack",
        "id": 2,
        "ok": False,
        "reason": "agent_acting",
    }
    await socket.send_json_to({"type": "input", "id": 3, "kind": "mouse", "x": "<script>", "y": 1})
    assert await socket.receive_json_from(timeout=5) == {"type": "input_refused", "id": 3, "reason": "invalid"}
    await socket.disconnect()


async def test_another_workspaces_socket_is_closed_and_forwards_nothing(charlie, acme):
    run = await database_sync_to_async(make_run)(acme, status=Run.Status.RUNNING, paused_at=timezone.now())
    layer, channel = await listening(run)
    socket = communicator(charlie, run)
    await socket.connect()

    assert (await socket.receive_output(timeout=5))["code"] == CLOSE_NOT_FOUND
    assert await nothing_arrives(layer, channel)


@pytest.mark.parametrize(
    "content",
    [
        {"kind": "mouse", "x": -1, "y": 5},
        {"kind": "mouse", "x": 1, "y": 5, "button": "back"},
        {"kind": "wheel", "x": 1, "y": 1, "dy": 1e9},
        {"kind": "key", "key": ""},
        {"kind": "key", "key": "x" * 33},
        {"kind": "text", "text": ""},
        {"kind": "text", "text": "x" * 1001},
        {"kind": "mouse", "x": True, "y": 1},
        {"kind": "eval", "code": "alert(1)"},
        {"kind": "key", "key": "a", "modifiers": ["hyper"]},
        {"kind": "key", "key": "a", "modifiers": "ctrl"},
        "text",
    ],
)
def test_malformed_input_is_not_forwarded(content):
    assert control_input(content) is None


def test_a_shortcut_keeps_its_modifiers_and_types_nothing():
    from runtime.browser.control import key_event

    shortcut = control_input({"kind": "key", "key": "a", "modifiers": ["ctrl", "ctrl"]})
    assert shortcut == {"kind": "key", "action": "press", "key": "a", "modifiers": ["ctrl"]}
    assert key_event("a", shortcut["modifiers"]) == {"key": "a", "modifiers": 2, "windowsVirtualKeyCode": 65}
    assert key_event("Tab", ["shift"])["modifiers"] == 8  # Shift+Tab moves back, not forward
    assert key_event("a")["text"] == "a" and key_event("Enter")["text"] == "\r"
