"""The web tier's end of a session's CDP link: a client's websocket, authenticated by the session's token, relayed
frame by frame to the relay of the worker whose Chromium it drives, each command through the CDP rules."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from agent_platform.models import workspaces_of
from runs import event_types
from runs.consumers import CLOSE_NOT_FOUND, LiveViewConsumer

from . import services
from .cdp import HandshakeRefused, WebSocketClient, check_client_message
from .models import BrowserSession

log = logging.getLogger(__name__)


@database_sync_to_async
def open_session(public_id: str, token: str) -> BrowserSession | None:
    """The running session the token opens, or None (unknown, another's, ended, not started yet)."""
    raw = public_id.removeprefix("brs_").replace("-", "").lower()
    if len(raw) != 32 or any(c not in "0123456789abcdef" for c in raw):
        return None
    session = BrowserSession.objects.filter(uuid=raw, status=BrowserSession.Status.RUNNING).first()
    if session is None or not session.relay_address or not session.token_matches(token):
        return None
    return session


@database_sync_to_async
def note_refusal(session_pk: int, refusal: str) -> None:
    services.record(session_pk, event_types.BROWSER_CDP_REFUSED.name, {"reason": refusal})


class BrowserCdpConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels ships no type information
    """ws(s)://<web>/browsers/<id>/cdp/<token>: what Playwright's connect_over_cdp, puppeteer and browser-use open."""

    upstream: WebSocketClient | None = None
    pump: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        session = await open_session(kwargs["session_id"], kwargs["token"])
        if session is None:
            await self.close()
            return
        self.session = session
        host, _, port = session.relay_address.rpartition(":")
        try:
            self.upstream = await WebSocketClient.connect(host, int(port), f"/cdp/{session.token()}")
        except (OSError, TimeoutError, HandshakeRefused):
            log.warning("browser session %s: its worker's relay did not answer", session.public_id, exc_info=True)
            await self.close()
            return
        await self.accept()
        self.pump = asyncio.ensure_future(self.relay_to_client())

    async def relay_to_client(self) -> None:
        upstream = self.upstream
        assert upstream is not None
        while True:
            message = await upstream.receive()
            if message is None:
                break
            if isinstance(message, str):
                await self.send(text_data=message)
            else:
                await self.send(bytes_data=message)
        await self.close()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.upstream is None:
            return
        text = text_data if text_data is not None else (bytes_data or b"").decode("utf-8", "replace")
        verdict = check_client_message(text, self.session.download_dir)
        if verdict.reply is not None:
            await self.send(text_data=verdict.reply)
            if verdict.refusal:
                await note_refusal(self.session.pk, verdict.refusal)
            return
        if verdict.forward is not None:
            try:
                await self.upstream.send(verdict.forward)
            except (ConnectionError, RuntimeError):
                await self.close()

    async def disconnect(self, code: Any) -> None:
        if self.pump is not None:
            self.pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.pump
        if self.upstream is not None:
            await self.upstream.close()
            self.upstream = None


@database_sync_to_async
def visible_session(user: Any, session_id: str) -> tuple[int, str] | None:
    """The (pk, public id) of the session the path names if it is in one of the user's workspaces."""
    raw = session_id.removeprefix("brs_").replace("-", "").lower()
    if len(raw) != 32 or any(c not in "0123456789abcdef" for c in raw):
        return None
    session = BrowserSession.objects.filter(uuid=raw, workspace__in=workspaces_of(user)).only("pk", "uuid").first()
    return (session.pk, session.public_id) if session is not None else None


@database_sync_to_async
def session_running(session_pk: int) -> bool:
    return BrowserSession.objects.filter(pk=session_pk, status=BrowserSession.Status.RUNNING).exists()


class BrowserLiveConsumer(LiveViewConsumer):
    """`ws/browsers/<id>/live/`: the session's live picture and a member's take control, by the run page's machinery
    (runs.consumers.LiveViewConsumer) keyed by the session's public id. A person may drive the page while the session
    runs: the client's own program is taken to be idle while someone does (both act on the same page)."""

    async def accept_visible(self) -> tuple[int, str] | None:
        user = await self.accept_signed_in()
        if user is None:
            return None
        found = await visible_session(user, self.scope["url_route"]["kwargs"]["session_id"])
        if found is None:
            await self.close(code=CLOSE_NOT_FOUND)
        return found

    async def accepts_control(self, pk: int) -> bool:
        return await session_running(pk)
