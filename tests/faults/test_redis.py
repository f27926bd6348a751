"""Redis restarted (a private redis-server, broker, cache and channel layer of a worker of its own): a run mid-way
finishes, every event is in the database, and a viewer that reconnects receives each one exactly once; while Redis is
away the API answers only JSON envelopes (the key's rate limit fails open, a launch is 503 with Retry-After); runs
whose messages died with it start within seconds of its return, not RUN_QUEUED_REDELIVER_SECONDS later."""

import asyncio
import contextlib
import logging
import shutil
import socket
import subprocess
import threading
import time

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.utils import timezone
from redis.exceptions import RedisError

from agent_platform import redis_clients
from agent_platform.celery import app
from runs import lifecycle
from runs.models import Event, Run
from runs.routing import websocket_urlpatterns
from runs.tasks import execute_run
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import sites
from tests.support.clients import ApiClient
from tests.support.factories import make_run
from tests.support.launching import events, finished, wait_for
from tests.support.replies import browser, done
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


@pytest.fixture
def web_on_private_redis(private_redis, settings, monkeypatch):
    """This process's every Redis client on the private server, as a web process's are on its REDIS_URL: the cache
    (rate limits), the channel layer, the launch's broker check and Celery's producer (a fresh pool: the app keeps
    the one it made for the session's broker)."""
    settings.REDIS_URL = private_redis.url
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": private_redis.url,
            "KEY_PREFIX": "pilothouse",
            "OPTIONS": redis_clients.cache_options(private_redis.url),
        }
    }
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_clients.channel_layer_host(private_redis.url)]},
        }
    }
    monkeypatch.setattr(app.conf, "broker_url", private_redis.url)
    monkeypatch.setattr(app, "_pool", None)
    monkeypatch.setattr(app.amqp, "_producer_pool", None)
    yield private_redis
    if app._pool is not None:
        app._pool.force_close_all()


def json_envelope(response) -> dict:
    """The error envelope of a response that must be one: JSON, never Django's HTML error page."""
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return response.json()["error"]


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


def test_the_api_answers_json_envelopes_while_redis_is_away_and_the_key_limit_fails_open(
    api, acme, web_on_private_redis, settings, caplog
):
    settings.API_RATE_LIMIT_PER_MINUTE = 2
    run = make_run(acme)
    assert [api.get("/workspace").status_code for _ in range(3)] == [200, 200, 429]  # the limit holds, in Redis

    web_on_private_redis.stop()
    with caplog.at_level(logging.WARNING, logger="agent_platform.api"):
        reads = [api.get("/runs"), api.get(f"/runs/{run.public_id}"), api.get("/workspace"), api.get("/queue")]
    launch = api.post("/runs", {"task": "Read the first page."})
    cancel = api.post(f"/runs/{run.public_id}/cancel")

    # Fails open: the key was over its limit, and is still served while the limit cannot be counted; said once.
    assert [read.status_code for read in reads] == [200, 200, 200, 200]
    assert all(read["Content-Type"].startswith("application/json") for read in reads)
    assert len([line for line in caplog.messages if "rate limits are not checked" in line]) == 1
    # A launch needs the broker: refused before anything is created, in the envelope, with when to retry.
    assert launch.status_code == 503
    error = json_envelope(launch)
    assert error["type"] == "service_unavailable"
    assert launch["Retry-After"] == "2"
    assert str(web_on_private_redis.port) not in error["message"]
    assert Run.objects.filter(workspace=acme).count() == 1
    # A cancel needs only the database (the wake-up through Redis is best effort).
    assert cancel.status_code == 200
    assert cancel.json()["status"] == Run.Status.CANCELLED
    assert ApiClient("not-a-key").get("/runs").status_code == 401  # the key is still checked

    web_on_private_redis.start()  # empty, as a restart without persistence leaves it
    launched = api.post("/runs", {"task": "Read the first page."})
    assert launched.status_code == 201, launched.content
    assert [api.get("/workspace").status_code for _ in range(2)] == [200, 429]  # counted again, from zero
    assert "rate limits are checked again" in caplog.text


def test_runs_whose_messages_died_with_redis_start_within_seconds_of_its_return(
    acme, messages_stub, messages_stub_server, web_on_private_redis, tmp_path, caplog
):
    """One run's message was in Redis when it went away (sent to a queue no worker had read yet), another's could not
    be sent at all while it was away: neither is failed, and both start as soon as the worker reconnects to the
    restarted Redis (runtime.worker.BrokerReconnected), with RUN_QUEUED_REDELIVER_SECONDS at its 300 s default."""
    env = fault_worker_environment(
        {
            "REDIS_URL": web_on_private_redis.url,
            "MEDIA_ROOT": str(tmp_path / "media"),
            "RUN_QUEUED_REDELIVER_SECONDS": "300",
        }
    )
    worker = WorkerProcess(env, tmp_path / "worker.log", concurrency=2, queues="runs")
    worker.start()
    try:
        messages_stub.agent(done(True, "Started after the restart."), done(True, "Started after the restart."))
        in_redis = make_run(acme)
        execute_run.apply_async(args=[in_redis.pk], kwargs={"fair": True}, queue=QUEUE)  # no worker reads QUEUE
        unsent = make_run(acme, admitted_at=None)  # waiting for admission

        web_on_private_redis.stop()
        with caplog.at_level(logging.WARNING, logger="runs.lifecycle"):
            lifecycle.admit(acme.pk)  # admitted while the broker is away: its message cannot be sent
        assert f"run pk {unsent.pk} waits for the broker" in caplog.text
        unsent.refresh_from_db()
        assert unsent.status == Run.Status.QUEUED and unsent.admitted_at is None, "back to waiting, not failed"

        time.sleep(1)
        web_on_private_redis.start()
        back_at = timezone.now()
        for run in (in_redis, unsent):
            started = wait_for(lambda run=run: events(run, "run.started"), timeout=60, message="the run to start")
            assert (started[0].processed_at - back_at).total_seconds() < 30
        assert finished(in_redis).status == Run.Status.SUCCEEDED
        assert finished(unsent).status == Run.Status.SUCCEEDED
    finally:
        worker.stop()

    (requeued,) = events(in_redis, "run.requeued")
    assert requeued.payload["reason"] == "the broker restarted and lost its queue"
    assert events(unsent, "run.requeued") == []  # it was admitted again, not redelivered
    assert [len(events(run, "run.started")) for run in (in_redis, unsent)] == [1, 1]
    assert "queued runs enqueued again" in (tmp_path / "worker.log").read_text()
