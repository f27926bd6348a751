"""Four hosts in one test (issue 27): a services host (PostgreSQL and Redis bound to its own address, the S3 server),
a web host (Daphne and the beat) and two worker hosts (Celery workers), each a network namespace of its own on one
bridge, sharing nothing but the network (tests/support/hosts.py, tests/support/netns.py). A run launched through the
web host's API runs on a worker host, and the web host serves its events (the API and the live socket), its live view,
its pictures and its trace from the bucket, never from a worker's disk; killing the worker host running a run moves
the run to the other worker host.

Needs root (namespaces and a bridge): `make test` runs as root, here and in CI. Runs in the PostgreSQL run of
`make test` only (tests/hosts/conftest.py): the hosts' cluster is their own either way.
"""

import asyncio
import base64
import io
import threading
import zipfile
from typing import Any

import pytest

from tests.support import hosts
from tests.support.launching import wait_for
from tests.support.replies import browser, done
from tests.support.websocket import WebSocket

pytestmark = [pytest.mark.slow, pytest.mark.worker, pytest.mark.browser]

SOCKET_TIMEOUT_SECONDS = 60
# A lost worker is noticed within its stale threshold plus the beat's reaping period (30 s); its run then starts on
# the other host and finishes its two remaining turns.
RECOVERY_TIMEOUT_SECONDS = 100
ORDER = b"name,qty\nwidget,2\n"


async def follow_over_socket(web: hosts.Web, session_cookie: str, run_id: str) -> list[dict[str, Any]]:
    """The run page's live socket on the web host, from the first event until run.finished, as a browser gets it."""
    socket = await WebSocket.connect(hosts.WEB_PORT, f"/ws/runs/{run_id}/?after=0", session_cookie, web.host.address)
    received: list[dict[str, Any]] = []
    try:
        while not received or received[-1]["type"] != "run.finished":
            message = await asyncio.wait_for(socket.receive(), SOCKET_TIMEOUT_SECONDS)
            if message["type"] == "event":
                received.append(message["event"])
    finally:
        await socket.close()
    return received


async def watch_live_view(web: hosts.Web, session_cookie: str, run_id: str, seen: threading.Event) -> dict[str, Any]:
    """The run page's live view on the web host: its first frame of the worker host's browser (the worker streams
    while someone watches, through the services host's Redis); `seen` is set when it arrives."""
    socket = await WebSocket.connect(hosts.WEB_PORT, f"/ws/runs/{run_id}/live/", session_cookie, web.host.address)
    try:
        assert (await asyncio.wait_for(socket.receive(), SOCKET_TIMEOUT_SECONDS))["type"] == "watching"
        while True:
            message = await asyncio.wait_for(socket.receive(), SOCKET_TIMEOUT_SECONDS)
            if message["type"] == "frame":
                seen.set()
                return message
    finally:
        await socket.close()


async def follow_and_watch(
    web: hosts.Web, session_cookie: str, run_id: str, seen: threading.Event
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    return await asyncio.gather(
        follow_over_socket(web, session_cookie, run_id), watch_live_view(web, session_cookie, run_id, seen)
    )


def screenshot_urls(events: list[dict[str, Any]]) -> list[str]:
    return [
        event["data"]["screenshot_url"]
        for event in events
        if event["type"] in ("agent.tool_result", "agent.final_view") and event["data"].get("screenshot_url")
    ]


def test_a_run_launched_on_the_web_host_runs_on_a_worker_host_and_is_served_by_the_web_host(
    hosts_stub, pages_site, services, web, worker_hosts
):
    frame_seen = threading.Event()

    def once_watched(request: dict) -> dict:
        # The run ends only once the live view showed a frame (or the wait is over, and the test fails below).
        frame_seen.wait(SOCKET_TIMEOUT_SECONDS)
        return done(True, "Seen the shop.")

    hosts_stub.agent(browser("navigate", url=f"{pages_site}/runtime_shop.html"), once_watched)
    session = web.signed_in()
    # A file uploaded to the web host is kept in the bucket; the worker host the run lands on reads it from there.
    with web.api() as api:
        uploaded = api.post("/files", files={"file": ("order.csv", ORDER, "text/csv")})
    assert uploaded.status_code == 201, uploaded.text
    file_id = uploaded.json()["id"]
    assert file_id in [key.rsplit("/", 1)[-1] for key in services.s3.keys("files/")]
    run_id = web.launch(task="Open the shop.", start_url=f"{pages_site}/index.html", file_ids=[file_id])

    # Live, through the services host's Redis: the worker host's events reach the web host's run socket, and its
    # browser's picture the web host's live-view socket.
    over_socket, frame = asyncio.run(follow_and_watch(web, session.cookies["sessionid"], run_id, frame_seen))
    assert frame["url"].startswith(pages_site), frame["url"]
    assert base64.b64decode(frame["jpeg"]).startswith(b"\xff\xd8")  # a JPEG
    run = web.finished(run_id)
    assert run["status"] == "succeeded", run["error"]
    assert run["output"] == "Seen the shop."
    worker_names = {worker_host.name for worker_host in worker_hosts}
    assert services.run_worker(run_id) in worker_names

    assert "order.csv (18 bytes" in str(hosts_stub.requests[0]["messages"][0]["content"])
    with web.api() as api:
        assert api.get(f"/files/{file_id}/content").content == ORDER

    events = web.events(run_id)
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert over_socket == events
    assert events[0]["type"] == "run.started" and events[-1]["type"] == "run.finished"

    # The pictures (the live view's image of the action turn, the final view) and the trace are in the bucket, and
    # the web host serves them from there, byte for byte.
    urls = screenshot_urls(events)
    names = [url.rstrip("/").rsplit("/", 1)[-1] for url in urls]
    assert len(names) == 2 and names[0].endswith(".jpg") and names[1].endswith(".png"), urls
    assert services.s3.keys(f"screenshots/{run_id}/") == sorted(f"screenshots/{run_id}/{name}" for name in names)
    for url, name in zip(urls, names, strict=True):
        picture = session.get(url)
        assert picture.status_code == 200, url
        assert picture.content == services.s3.read(f"screenshots/{run_id}/{name}")
    page = session.get(f"/runs/{run_id}/")
    assert page.status_code == 200
    assert f"/runs/{run_id}/trace.zip" in page.text
    assert all(url in page.text for url in urls)  # the replay shows each picture
    trace = session.get(f"/runs/{run_id}/trace.zip")
    assert trace.status_code == 200
    assert trace.content == services.s3.read(f"traces/{run_id}/trace.zip")
    assert any(name.endswith(".trace") for name in zipfile.ZipFile(io.BytesIO(trace.content)).namelist())

    # Nothing was kept on any host's own disk, and no log holds the services' credentials.
    for worker_host in worker_hosts:
        assert hosts.files_under(worker_host.media_root) == []
    assert hosts.files_under(web.host.directory / "media") == []
    logs = [web.host.log("web.log"), web.host.log("beat.log")]
    logs += [worker_host.worker.log_path.read_text(errors="replace") for worker_host in worker_hosts]
    for log in logs:
        assert services.redis_password not in log
        assert hosts.s3.SECRET_ACCESS_KEY not in log


def test_killing_the_worker_host_of_a_run_continues_it_on_the_other_host_and_later_runs_go_there(
    hosts_stub, pages_site, services, web, worker_hosts
):
    """Every process of the worker host running a run is killed while its second model request is in flight: the
    run goes on from its last committed turn on the other worker host and succeeds, and the next runs go there."""
    in_flight = threading.Event()
    release = threading.Event()

    def held(request: dict) -> dict:
        # The killed host's second request: answered only after its host is gone, so the answer is lost with it.
        in_flight.set()
        release.wait(RECOVERY_TIMEOUT_SECONDS)
        return browser("navigate", url=f"{pages_site}/second.html")

    hosts_stub.agent(
        browser("navigate", url=f"{pages_site}/runtime_shop.html"),
        held,
        browser("navigate", url=f"{pages_site}/second.html"),
        done(True, "Seen both pages."),
    )
    run_id = web.launch(task="Open the shop, then the second page.", start_url=f"{pages_site}/index.html")
    by_name = {worker_host.name: worker_host for worker_host in worker_hosts}
    try:
        assert in_flight.wait(hosts.RUN_TIMEOUT_SECONDS), "the run's second model request never came"
        # The first turn's record (and its checkpoint) is written while the model answers the second request: the
        # host dies once it is committed.
        wait_for(
            lambda: any(event["type"] == "agent.tool_result" for event in web.events(run_id)),
            timeout=hosts.START_TIMEOUT_SECONDS,
            interval=0.5,
            message="the first turn's record",
        )
        running_on = services.run_worker(run_id)
        assert running_on in by_name, running_on
        lost = by_name.pop(running_on)
        lost.host.kill_everything()
    finally:
        release.set()
    (survivor,) = by_name.values()

    run = web.finished(run_id, timeout=RECOVERY_TIMEOUT_SECONDS)
    events = web.events(run_id)
    types = [event["type"] for event in events]
    assert run["status"] == "succeeded", (run["error"], types)
    assert run["output"] == "Seen both pages."
    assert services.run_worker(run_id) == survivor.name
    # One timeline: every seq once and in order, the loss and the recovery said in it.
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    assert "run.worker_lost" in types and "run.recovered" in types, types
    recovered = next(event for event in events if event["type"] == "run.recovered")
    # from the first turn, the one committed; the second, in flight when the host died, is redone
    assert recovered["data"] == {"worker": survivor.name, "from_turn": 1, "cause": "worker_lost"}
    assert types.index("run.worker_lost") < types.index("run.recovered") < len(types) - 1
    assert types.count("run.started") == 1 and types.count("run.finished") == 1

    # The continuation is the same conversation, sent again as the lost host sent it (the strict stub refuses
    # anything else, and the fixture fails on a refusal), with the agent told of the restart after the first turn.
    agent_requests = hosts_stub.requests_for("agent")
    assert len(agent_requests) == 4, "each turn's request, and the lost one sent once more"
    held_request, continued = agent_requests[1]["messages"], agent_requests[2]["messages"]
    assert continued[:-1] == held_request[:-1]
    assert "the worker running this task was lost" in continued[-1]["content"][-1]["text"]

    # The pictures of both hosts' turns (the lost host's first, the survivor's redone second, the final view) are in
    # the bucket and served by the web host: the lost host's disk went with it, the bucket did not.
    urls = screenshot_urls(events)
    names = [url.rstrip("/").rsplit("/", 1)[-1] for url in urls]
    assert len(names) == 3, urls
    assert services.s3.keys(f"screenshots/{run_id}/") == sorted(f"screenshots/{run_id}/{name}" for name in names)
    session = web.signed_in()
    for url, name in zip(urls, names, strict=True):
        picture = session.get(url)
        assert picture.status_code == 200 and picture.content == services.s3.read(f"screenshots/{run_id}/{name}")

    # The next runs go to the surviving host: the lost one takes nothing any more.
    for index in range(2):
        hosts_stub.agent(browser("navigate", url=f"{pages_site}/second.html"), done(True, f"Next run {index}."))
        next_run = web.launch(task="Open the second page.", start_url=f"{pages_site}/index.html")
        assert web.finished(next_run)["status"] == "succeeded"
        assert services.run_worker(next_run) == survivor.name
