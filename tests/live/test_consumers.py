"""The live transport: a run's socket sends the backlog after the client's seq, then live events, exactly once."""

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.test import Client

from agent_platform.asgi import application
from evals.models import Batch
from evals.services import cancel_batch
from runs.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED
from runs.events import emit
from runs.routing import websocket_urlpatterns
from tests.support.factories import make_run

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def anyio_backend():
    return "asyncio"


def communicator(user, path: str) -> WebsocketCommunicator:
    socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    socket.scope["user"] = user
    return socket


async def receive_events(socket: WebsocketCommunicator, count: int) -> list[dict]:
    events = []
    while len(events) < count:
        message = await socket.receive_json_from(timeout=5)
        if message["type"] == "event":
            events.append(message["event"])
    return events


async def receive_until(socket: WebsocketCommunicator, kind: str) -> list[dict]:
    received = []
    while True:
        message = await socket.receive_json_from(timeout=5)
        if message["type"] == kind:
            return received
        received.append(message)


emit_async = database_sync_to_async(emit)


async def test_backlog_then_live_events_in_order(alice, acme):
    run = await database_sync_to_async(make_run)(acme)
    for turn in (1, 2):
        await emit_async(run, "agent.message", {"text": f"turn {turn}", "turn": turn})
    socket = communicator(alice, f"/ws/runs/{run.public_id}/")
    connected, _ = await socket.connect()
    assert connected
    backlog = await receive_until(socket, "caught_up")
    assert [m["event"]["seq"] for m in backlog] == [1, 2]
    assert backlog[0]["event"]["data"] == {"text": "turn 1", "turn": 1}

    await emit_async(run, "agent.tool_use", {"id": "t1", "name": "navigate", "input": {"url": "x"}, "turn": 3})
    live = await receive_events(socket, 1)
    assert live[0]["seq"] == 3
    assert live[0]["type"] == "agent.tool_use"
    await socket.disconnect()


async def test_resume_after_seq_sends_only_later_events(alice, acme):
    run = await database_sync_to_async(make_run)(acme)
    for turn in range(1, 6):
        await emit_async(run, "agent.message", {"text": f"turn {turn}", "turn": turn})
    socket = communicator(alice, f"/ws/runs/{run.public_id}/?after=3")
    await socket.connect()
    backlog = await receive_until(socket, "caught_up")
    assert [m["event"]["seq"] for m in backlog] == [4, 5]
    await socket.disconnect()


async def test_live_event_already_sent_is_dropped_and_a_gap_is_filled_from_the_database(alice, acme):
    run = await database_sync_to_async(make_run)(acme)
    await emit_async(run, "agent.message", {"text": "one", "turn": 1})
    socket = communicator(alice, f"/ws/runs/{run.public_id}/")
    await socket.connect()
    await receive_until(socket, "caught_up")

    # A duplicate push of seq 1 (as after a redelivery) must not reach the client twice.
    first = await database_sync_to_async(lambda: run.events.get(seq=1).as_dict())()
    await get_channel_layer().group_send(f"run.{run.public_id}", {"type": "run.event", "event": first})
    # Seq 2 is written without a push (a lost push); seq 3's push must bring 2 along from the database.
    second = await database_sync_to_async(
        lambda: run.events.create(seq=2, type="agent.message", payload={"text": "two", "turn": 2})
    )()
    await database_sync_to_async(lambda: type(run).objects.filter(pk=run.pk).update(last_seq=2))()
    assert second.seq == 2
    await emit_async(run, "agent.message", {"text": "three", "turn": 3})
    events = await receive_events(socket, 2)
    assert [e["seq"] for e in events] == [2, 3]
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()


async def test_another_workspace_run_is_refused_as_not_found(charlie, acme):
    run = await database_sync_to_async(make_run)(acme)
    await emit_async(run, "agent.message", {"text": "secret", "turn": 1})
    socket = communicator(charlie, f"/ws/runs/{run.public_id}/")
    await socket.connect()
    closed = await socket.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": CLOSE_NOT_FOUND}
    await socket.wait()  # the consumer's task ends here, not in the event loop's teardown


async def test_unknown_run_is_refused_the_same_way(alice):
    socket = communicator(alice, "/ws/runs/run_doesnotexist/")
    await socket.connect()
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": CLOSE_NOT_FOUND}
    await socket.wait()  # the consumer's task ends here, not in the event loop's teardown


async def test_anonymous_viewer_is_refused(acme):
    run = await database_sync_to_async(make_run)(acme)
    socket = communicator(AnonymousUser(), f"/ws/runs/{run.public_id}/")
    await socket.connect()
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": CLOSE_UNAUTHENTICATED}
    await socket.wait()  # the consumer's task ends here, not in the event loop's teardown


async def test_signed_in_browser_session_reaches_the_socket_through_the_real_stack(alice, acme):
    run = await database_sync_to_async(make_run)(acme)
    await emit_async(run, "run.started", {"model": run.model, "max_turns": 30, "scripted": False})
    client = Client()
    await database_sync_to_async(client.force_login)(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    socket = WebsocketCommunicator(
        application,
        f"/ws/runs/{run.public_id}/",
        headers=[(b"cookie", cookie), (b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
    )
    connected, _ = await socket.connect()
    assert connected
    backlog = await receive_until(socket, "caught_up")
    assert [m["event"]["type"] for m in backlog] == ["run.started"]
    await socket.disconnect()


async def test_foreign_origin_is_refused(alice, acme):
    run = await database_sync_to_async(make_run)(acme)
    socket = WebsocketCommunicator(
        application, f"/ws/runs/{run.public_id}/", headers=[(b"origin", b"http://evil.example")]
    )
    connected, _ = await socket.connect()
    assert not connected
    await socket.wait()  # the application's task ends here, not in the event loop's teardown


async def test_runs_list_socket_hears_row_changes_of_its_workspace_only(alice, acme, umbrella):
    mine = await database_sync_to_async(make_run)(acme)
    theirs = await database_sync_to_async(make_run)(umbrella)
    socket = communicator(alice, "/ws/runs/?workspace=acme")
    await socket.connect()
    assert (await socket.receive_json_from(timeout=5))["type"] == "subscribed"
    await emit_async(theirs, "run.started", {"model": "m", "max_turns": 3, "scripted": False})
    await emit_async(mine, "agent.message", {"text": "not a row change", "turn": 1})
    await emit_async(mine, "run.started", {"model": "m", "max_turns": 3, "scripted": False})
    message = await socket.receive_json_from(timeout=5)
    assert message == {"type": "run.changed", "run_id": mine.public_id}
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()


async def test_runs_list_socket_refuses_a_workspace_the_user_is_not_in(charlie, acme):
    socket = communicator(charlie, "/ws/runs/?workspace=acme")
    await socket.connect()
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": CLOSE_NOT_FOUND}
    await socket.wait()  # the consumer's task ends here, not in the event loop's teardown


async def test_runs_list_socket_tells_its_workspace_a_batch_changed(alice, acme, umbrella):
    mine = await database_sync_to_async(Batch.objects.create)(workspace=acme, name="mine")
    theirs = await database_sync_to_async(Batch.objects.create)(workspace=umbrella, name="theirs")
    socket = communicator(alice, "/ws/runs/?workspace=acme")
    await socket.connect()
    assert (await socket.receive_json_from(timeout=5))["type"] == "subscribed"
    await database_sync_to_async(cancel_batch)(theirs)
    await database_sync_to_async(cancel_batch)(mine)
    assert await socket.receive_json_from(timeout=5) == {"type": "batch.changed", "batch_id": mine.public_id}
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()
