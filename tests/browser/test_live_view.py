"""The worker side of the live view, with real Chromium, Redis and the channel layer: nothing is streamed while nobody
watches; frames (JPEG, sized, with the last action's point) flow to the run's live group while someone does; they
stop when the viewer leaves or the run ends."""

import base64
import time

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.cache import cache

from runs.live import live_group, mark_watched, presence_key
from runtime.browser.live_view import LiveView
from tests.support import browsers
from tests.support.browsers import call, make_toolset
from tests.support.launching import wait_for

host = browsers.host  # the module's browser host (a fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def watched_page(host, site):
    toolset = make_toolset(host)
    call(host, toolset, "navigate", url=f"{site}/long.html")
    run_id = f"run_live{time.monotonic_ns()}"
    cache.delete(presence_key(run_id))
    view = LiveView(host, toolset, run_id)
    yield view
    view.stop()
    host.run(toolset.close(), timeout=30)


def frames_while(view: LiveView, act, seconds: float, first_within: float = 30) -> list[dict]:
    """Listen on the run's live group as the live socket's consumer does, from before `act()` runs: until the first
    message (at most `first_within` seconds, a loaded machine's worst), then for `seconds` more. Joining first means
    a frame sent while `act` runs is never missed, however soon it comes."""
    layer = get_channel_layer()

    async def listen() -> list[dict]:
        import asyncio

        channel = await layer.new_channel()
        await layer.group_add(live_group(view.run_public_id), channel)
        await asyncio.get_running_loop().run_in_executor(None, act)
        received = []
        deadline = time.monotonic() + first_within
        while time.monotonic() < deadline:
            try:
                received.append(await asyncio.wait_for(layer.receive(channel), deadline - time.monotonic()))
            except TimeoutError:
                break
            if len(received) == 1:
                deadline = time.monotonic() + seconds
        await layer.group_discard(live_group(view.run_public_id), channel)
        return received

    return async_to_sync(listen)()


def test_nothing_is_streamed_while_nobody_watches(watched_page):
    time.sleep(1.5)
    assert watched_page._cdp is None
    assert watched_page.frames_sent == 0


def test_frames_flow_while_watched_with_the_last_actions_point_and_stop_after(watched_page, host):
    watched_page.note_action("left_click", {"target": {"type": "coordinate", "x": 120, "y": 80}})

    def watch_and_scroll() -> None:
        mark_watched(watched_page.run_public_id)
        call(host, watched_page.toolset, "scroll", target={"type": "coordinate", "x": 10, "y": 10},
             scroll_direction="down")  # fmt: skip

    frames = [m for m in frames_while(watched_page, watch_and_scroll, 3) if m["type"] == "live.frame"]
    assert frames, "no frame while watched"
    first = frames[0]
    assert base64.b64decode(first["jpeg"])[:3] == b"\xff\xd8\xff"  # a JPEG
    assert first["width"] and first["height"]
    assert first["cursor"] == {"x": 120.0, "y": 80.0, "action": "left_click"}
    assert len(frames) <= 3 * 5 + 1  # throttled to five a second: the first, then at most 5 a second for 3 s

    cache.delete(presence_key(watched_page.run_public_id))
    wait_for(lambda: watched_page._cdp is None, timeout=30, message="the poll to see the viewer gone")
    sent = watched_page.frames_sent
    call(host, watched_page.toolset, "scroll", target={"type": "coordinate", "x": 10, "y": 10},
         scroll_direction="down")  # fmt: skip
    time.sleep(0.8)
    assert watched_page.frames_sent == sent


def test_viewers_are_told_when_the_run_ends(watched_page):
    layer = get_channel_layer()

    async def ended() -> dict:
        import asyncio

        channel = await layer.new_channel()
        await layer.group_add(live_group(watched_page.run_public_id), channel)
        await asyncio.get_running_loop().run_in_executor(None, watched_page.stop)
        return await asyncio.wait_for(layer.receive(channel), 5)

    assert async_to_sync(ended)() == {"type": "live.ended"}
