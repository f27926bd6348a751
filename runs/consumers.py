"""Live websockets: a run's events (backlog from the database, then live, by seq), its browser's live picture, and a
workspace's run changes."""

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.base_user import AbstractBaseUser

from agent_platform import metrics
from agent_platform.access import SESSION_KEY
from agent_platform.models import workspaces_of
from runs.live import amark_watched, control_group, control_input, input_id, live_group

from .events import run_group, workspace_group
from .models import Event, Run

log = logging.getLogger(__name__)

# Close codes in the private range: the client tells "sign in again" from "no such run" without an HTTP status.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
BACKLOG_CHUNK = 500


def _query_int(scope: Mapping[str, Any], name: str) -> int:
    values = parse_qs(scope.get("query_string", b"").decode()).get(name)
    try:
        return max(0, int(values[0])) if values else 0
    except ValueError:
        return 0


@database_sync_to_async
def _visible_run(user: AbstractBaseUser, run_id: str) -> tuple[int, str] | None:
    row = Run.objects.filter(public_id=run_id, workspace__in=workspaces_of(user)).values_list("pk", "public_id").first()
    return (row[0], row[1]) if row else None


@database_sync_to_async
def _events_between(run_pk: int, after: int, up_to: int | None) -> list[dict[str, Any]]:
    events = Event.objects.filter(run_id=run_pk, seq__gt=after).order_by("seq")
    if up_to is not None:
        events = events.filter(seq__lte=up_to)
    return [event.as_dict() for event in events[:BACKLOG_CHUNK]]


class SignedInConsumer(AsyncJsonWebsocketConsumer):
    """A socket for signed-in operators: every socket here opens with the same checks, made once in these methods."""

    async def accept_signed_in(self) -> AbstractBaseUser | None:
        """Accept, then the signed-in user; an anonymous visitor's socket is closed (4401) and None returned.

        Accept first so the close code reaches the browser; a refused handshake only shows as code 1006."""
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return None
        return user

    async def accept_visible_run(self) -> tuple[int, str] | None:
        """Accept, then the (pk, public_id) of the run the path names if the user may see it; otherwise the socket is
        closed (4401 signed out, 4404 no such run, or another workspace's: never revealed to exist) and None returned."""
        user = await self.accept_signed_in()
        if user is None:
            return None
        found = await _visible_run(user, self.scope["url_route"]["kwargs"]["run_id"])
        if found is None:
            await self.close(code=CLOSE_NOT_FOUND)
        return found


class RunConsumer(SignedInConsumer):
    """`ws/runs/<run_id>/?after=SEQ`: every event with seq > SEQ exactly once and in order, then live ones.

    Messages to the client: {"type": "event", "event": {id, seq, type, data, processed_at}} and, once the
    backlog is through, {"type": "caught_up", "last_seq": N}.
    """

    async def connect(self) -> None:
        self.run_pk: int | None = None
        self.last_sent = _query_int(self.scope, "after")
        found = await self.accept_visible_run()
        if found is None:
            return
        self.run_pk, public_id = found
        self.group = run_group(public_id)
        # Join before reading the backlog: an event committed in between arrives as a live message too, and the
        # seq check below drops it, so nothing falls between the two.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_from_database(up_to=None)
        await self.send_json({"type": "caught_up", "last_seq": self.last_sent})

    async def disconnect(self, code: int) -> None:
        if self.run_pk is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        # Clients only listen; a ping keeps proxies from closing an idle socket.
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong", "last_seq": self.last_sent})

    async def send_from_database(self, up_to: int | None) -> None:
        assert self.run_pk is not None  # only a socket that found its run reads events
        while True:
            events = await _events_between(self.run_pk, self.last_sent, up_to)
            for event in events:
                await self.send_event(event)
            if len(events) < BACKLOG_CHUNK:
                return

    async def send_event(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "event", "event": event})
        self.last_sent = event["seq"]

    async def run_event(self, message: dict[str, Any]) -> None:
        """A live event from runs.events.push: dropped if already sent; a skipped seq is filled from the database."""
        if self.run_pk is None:
            return
        event = message["event"]
        seq = event["seq"]
        if seq <= self.last_sent:
            return
        if seq > self.last_sent + 1:
            await self.send_from_database(up_to=seq - 1)
        if seq == self.last_sent + 1:
            await self.send_event(event)
        else:
            # The database did not (yet) hold the gap; send it all from there so order stays strict.
            await self.send_from_database(up_to=seq)


@database_sync_to_async
def _list_workspace(user: AbstractBaseUser, session: Mapping[str, Any] | None, slug: str | None) -> int | None:
    workspaces = workspaces_of(user)
    if slug:
        workspace = workspaces.filter(slug=slug).first()
    else:
        chosen = session.get(SESSION_KEY) if session is not None else None
        workspace = (workspaces.filter(pk=chosen).first() if chosen else None) or workspaces.order_by("name").first()
    return workspace.pk if workspace else None


class RunsListConsumer(SignedInConsumer):
    """`ws/runs/?workspace=SLUG`: {"type": "run.changed", "run_id": ...} whenever a row of the runs list changes, and
    {"type": "batch.changed", "batch_id": ...} when a batch launches runs, finishes or is cancelled (its page listens)."""

    async def connect(self) -> None:
        self.group: str | None = None
        user = await self.accept_signed_in()
        if user is None:
            return
        slug = (parse_qs(self.scope.get("query_string", b"").decode()).get("workspace") or [None])[0]
        workspace_pk = await _list_workspace(user, self.scope.get("session"), slug)
        if workspace_pk is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.group = workspace_group(workspace_pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.send_json({"type": "subscribed"})

    async def disconnect(self, code: int) -> None:
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def run_changed(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "run.changed", "run_id": message["run_id"]})

    async def batch_changed(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "batch.changed", "batch_id": message["batch_id"]})


# How often a connected live viewer refreshes its presence (well inside runs.live.PRESENCE_TTL_SECONDS), and how
# old a frame may be before a slow viewer skips it rather than fall further behind.
PRESENCE_REFRESH_SECONDS = 2
FRAME_MAX_AGE_SECONDS = 1.5
# How long a live socket trusts its last reading of Run.accepts_control: input arrives many times a second, and a
# person's control ends at most this long after the run is handed back.
CONTROL_CHECK_SECONDS = 1.0


@database_sync_to_async
def _accepts_control(run_pk: int) -> bool:
    run = Run.objects.filter(pk=run_pk).only("status", "paused_at").first()
    return run is not None and run.accepts_control


class LiveViewConsumer(SignedInConsumer):
    """`ws/runs/<run_id>/live/`: the live picture of the run's browser tab while this socket is open.

    Being connected is what makes the worker stream (a presence key it polls; on connect the worker is also asked for
    the current frame, since a paused page sends none); frames are forwarded as
    {"type": "frame", "jpeg": base64, "width", "height", "url", "cursor": {x, y, action} | null}, stale ones
    dropped; {"type": "ended"} when the run's browser closes.

    While the person has control, each {"type": "input", "id": N, ...} is answered once: {"type": "input_refused",
    "id", "reason"} by the web (not in control, invalid), or {"type": "input_ack", "id", "ok", "reason"} by the
    worker that holds the page, sent to this socket's own channel. No answer means no worker took it.
    """

    async def accept_visible(self) -> tuple[int, str] | None:
        """The (pk, public id) of what this socket shows, or None once closed: a run here; a browser session's socket
        (browsers.consumers) shows a session with the same machinery, keyed by the session's public id."""
        return await self.accept_visible_run()

    async def accepts_control(self, pk: int) -> bool:
        """Whether a person's input may reach the page now."""
        return await _accepts_control(pk)

    async def connect(self) -> None:
        self.group: str | None = None
        self.presence: asyncio.Future[None] | None = None
        self.control_checked_at = 0.0
        self.control_allowed = False
        found = await self.accept_visible()
        if found is None:
            return
        self.run_pk, self.public_id = found
        self.group = live_group(self.public_id)
        metrics.live_viewers.inc()  # before the first await: a disconnect always finds it counted
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.presence = asyncio.ensure_future(self.keep_present())
        await self.send_json({"type": "watching"})
        await self.ask_for_frame()

    async def ask_for_frame(self) -> None:
        """The worker holding the page sends its current frame to every viewer (and starts streaming if this is the
        first): a paused or idle page gives the screencast nothing to send. Marked present first, so its next poll
        does not stop what this starts."""
        try:
            await amark_watched(self.public_id)
            group = control_group(self.public_id)
            await self.channel_layer.group_send(group, {"type": "live.wanted", "group": group})
        except Exception:
            log.debug("live view of %s: no frame asked for", self.public_id, exc_info=True)

    async def keep_present(self) -> None:
        while True:
            try:
                await amark_watched(self.public_id)
            except Exception:
                # the worker then sees no viewer and streams nothing: the page shows the screenshots
                log.debug("live view of %s: presence not recorded", self.public_id, exc_info=True)
            await asyncio.sleep(PRESENCE_REFRESH_SECONDS)

    async def disconnect(self, code: int) -> None:
        if self.presence is not None:
            self.presence.cancel()
        if self.group is not None:
            metrics.live_viewers.dec()
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not isinstance(content, dict) or self.group is None:
            return
        if content.get("type") == "ping":
            await self.send_json({"type": "pong"})
        elif content.get("type") == "input":
            await self.forward_input(content)

    async def forward_input(self, content: dict[str, Any]) -> None:
        """A person's mouse, wheel, key or typed text for the run's page: only on a member's socket (the socket was
        opened on a run of their workspace) and only while the run accepts control; sent to the worker that holds
        the page, never stored or logged."""
        cleaned = control_input(content)
        number = input_id(content)
        if cleaned is None:
            await self.send_json({"type": "input_refused", "id": number, "reason": "invalid"})
            return
        now = time.monotonic()
        if now - self.control_checked_at > CONTROL_CHECK_SECONDS:
            self.control_allowed = await self.accepts_control(self.run_pk)
            self.control_checked_at = now
        if not self.control_allowed:
            await self.send_json({"type": "input_refused", "id": number, "reason": "not_in_control"})
            return
        group = control_group(self.public_id)
        await self.channel_layer.group_send(
            group,
            {"type": "control.input", "group": group, "input": cleaned, "id": number, "reply_to": self.channel_name},
        )

    async def control_ack(self, message: dict[str, Any]) -> None:
        """The worker's answer to one of this socket's inputs: applied, or why not."""
        await self.send_json(
            {
                "type": "input_ack",
                "id": message.get("id"),
                "ok": bool(message.get("ok")),
                "reason": message.get("reason"),
            }
        )

    async def live_frame(self, message: dict[str, Any]) -> None:
        if time.time() - float(message.get("sent_at") or 0) > FRAME_MAX_AGE_SECONDS:
            return
        await self.send_json(
            {
                "type": "frame",
                "jpeg": message["jpeg"],
                "width": message.get("width"),
                "height": message.get("height"),
                "url": message.get("url") or "",
                "cursor": message.get("cursor"),
            }
        )

    async def live_ended(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "ended"})
