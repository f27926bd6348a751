"""Redis restarted mid-run (a private redis-server, broker and channel layer of a worker of its own): the run
finishes, every event is in the database, and a viewer that reconnects receives each one exactly once."""

import asyncio
import contextlib
import shutil
import socket
import subprocess
import threading
import time

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from redis.exceptions import RedisError

from agent_platform.celery import app
from runs.models import Event, Run
from runs.routing import websocket_urlpatterns
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import sites
from tests.support.factories import make_run
from tests.support.replies import browser
from tests.support.sites import site_url
from tests.support.workers import WorkerProcess, fault_worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_site = sites.fault_site

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.anyio,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs a redis-server on PATH"),
]
QUEUE = "redis-restart-tests"


@pytest.fixture
def anyio_backend():
    return "asyncio"


class PrivateRedis:
    """A redis-server of this test only, without persistence, restartable on the same port."""

    def __init__(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("the private redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def private_redis():
    redis_server = PrivateRedis()
    redis_server.start()
    yield redis_server
    redis_server.stop()


def held(reply: dict) -> tuple[threading.Event, threading.Event, object]:
    """A scripted reply that waits for the test: (reached, release, the reply)."""
    reached, release = threading.Event(), threading.Event()

    def answer(request: dict) -> dict:
        reached.set()
        release.wait(60)
        return reply

    return reached, release, answer


async def wait_event(event: threading.Event, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not event.is_set():
        assert time.monotonic() < deadline, "timed out waiting for the run"
        await asyncio.sleep(0.05)


async def receive_events(viewer: WebsocketCommunicator, until_seq=None, until_type: str | None = None) -> list[dict]:
    """Events from the viewer up to seq `until_seq` or an event of `until_type` (a receive that times out would
    cancel the consumer, so the test always knows what to wait for)."""
    received = []
    while True:
        message = await viewer.receive_json_from(timeout=30)
        if message["type"] == "event":
            received.append(message["event"])
            if message["event"]["seq"] == until_seq or message["event"]["type"] == until_type:
                return received


async def written_after(run: Run, seq: int, awaited_type: str, timeout: float = 30) -> list[str]:
    """The types of the run's events after `seq` in the database, once one of `awaited_type` is among them (or the
    timeout passed)."""
    deadline = time.monotonic() + timeout
    while True:
        types = await database_sync_to_async(
            lambda: list(Event.objects.filter(run=run, seq__gt=seq).order_by("seq").values_list("type", flat=True))
        )()
        if awaited_type in types or time.monotonic() > deadline:
            return types
        await asyncio.sleep(0.1)


async def follow_to_the_end(run: Run, user, after: int) -> tuple[list[dict], int]:
    """What the live viewer does: (re)connect with the last seq it has until it saw run.finished. A web process's
    channel layer still holds connections to the Redis that went away: the first read on one fails and drops the
    socket, as it would in Daphne, and the viewer connects again."""
    received: list[dict] = []
    for attempt in range(5):
        viewer = WebsocketCommunicator(
            URLRouter(websocket_urlpatterns),
            f"/ws/runs/{run.public_id}/?after={received[-1]['seq'] if received else after}",
        )
        viewer.scope["user"] = user
        try:
            assert (await viewer.connect())[0]
            while True:
                message = await viewer.receive_json_from(timeout=30)
                if message["type"] == "event":
                    received.append(message["event"])
                    if message["event"]["type"] == "run.finished":
                        await viewer.disconnect()
                        return received, attempt
        except (ConnectionError, OSError, RedisError):
            with contextlib.suppress(Exception):  # end the dropped consumer's task here, not in the loop's teardown
                await viewer.wait()
            await asyncio.sleep(0.2)
    pytest.fail("the viewer could not follow the run to its end")


async def test_a_redis_restart_mid_run_loses_no_event_for_a_reconnecting_viewer(
    acme, alice, fault_site, messages_stub, messages_stub_server, private_redis, settings, tmp_path
):
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [private_redis.url]}}
    }
    env = await database_sync_to_async(fault_worker_environment)(
        {"REDIS_URL": private_redis.url, "MEDIA_ROOT": str(tmp_path / "media")}
    )
    worker = WorkerProcess(env, tmp_path / "worker.log", queues=QUEUE)
    await asyncio.to_thread(worker.start)
    try:
        outage_reached, end_outage, during_outage = held(browser("get_page_text"))
        restart_reached, finish_run, after_restart = held(tool_use_reply("done", {"success": True, "output": "ok"}))
        messages_stub.agent(browser("get_page_text"), during_outage, after_restart)
        run = await database_sync_to_async(make_run)(acme, start_url=f"{site_url(fault_site)}/runtime_shop.html")

        def enqueue() -> None:
            from runs.tasks import execute_run

            with app.connection_for_write(private_redis.url) as connection:
                execute_run.apply_async(args=[run.pk], queue=QUEUE, connection=connection)

        await asyncio.to_thread(enqueue)
        first = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.public_id}/")
        first.scope["user"] = alice
        assert (await first.connect())[0]
        await wait_event(outage_reached)
        written = await database_sync_to_async(lambda: Run.objects.get(pk=run.pk).last_seq)()
        seen_first = await receive_events(first, until_seq=written)
        assert seen_first and seen_first[0]["type"] == "run.started"

        private_redis.stop()  # the model is thinking; the next turn's events are written while Redis is down
        with contextlib.suppress(Exception):  # its channel layer connection died with Redis
            await first.disconnect()
        end_outage.set()
        await wait_event(restart_reached)
        # The turn's record is committed by the run's lane while the model answers the next request (runtime.record):
        # it lands while that request is held, not necessarily before the request arrives.
        written_during_outage = await written_after(run, seen_first[-1]["seq"], "agent.tool_result")
        assert "agent.tool_result" in written_during_outage
        private_redis.start()

        finish_run.set()
        seen_second, reconnects = await follow_to_the_end(run, alice, after=seen_first[-1]["seq"])
    finally:
        end_outage.set() if "end_outage" in locals() else None
        finish_run.set() if "finish_run" in locals() else None
        await asyncio.to_thread(worker.stop)

    await database_sync_to_async(run.refresh_from_db)()
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    stored = await database_sync_to_async(lambda: list(Event.objects.filter(run=run).order_by("seq")))()
    assert [event.seq for event in stored] == list(range(1, run.last_seq + 1))
    seqs = [event["seq"] for event in seen_first + seen_second]
    assert seqs == list(range(1, run.last_seq + 1)), "every event exactly once, in order, across the reconnect"
    assert [event["id"] for event in seen_first + seen_second] == [event.public_id for event in stored]
    assert reconnects <= 2
