"""The CDP link between the web tier and a worker's browser: the rules a client's commands pass (what would leave the
egress guard or reach the worker's own files is refused), and a minimal websocket client over asyncio streams (the
web relays frames to the worker's relay, the worker's observer reads its own Chromium)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

# Schemes a client may open a page at: the rest (file:, chrome:, view-source:, javascript: ...) would read the worker
# or the browser itself rather than the web, which is reached only through the egress guard.
OPEN_SCHEMES = frozenset({"http", "https", "about", "data", "blob"})
# Commands that would take a connection past the guard, end the browser under the worker, or read or write the
# worker's files.
REFUSED_METHODS = {
    "Browser.close": "the browser is stopped through the API (POST /api/v1/browsers/{id}/stop), not over CDP",
    "Browser.crash": "the browser is stopped through the API, not over CDP",
    "Browser.crashGpuProcess": "the browser is stopped through the API, not over CDP",
    "Browser.executeBrowserCommand": "browser commands are not available on Pilothouse's browsers",
    "Target.setRemoteLocations": "remote target discovery would connect past the egress guard",
    "DOM.setFileInputFiles": "files on the worker cannot be set on a page; uploads are not available over CDP",
}
REFUSED_DOMAINS = {
    "Tethering": "port tethering would open a connection past the egress guard",
    "Extensions": "extensions cannot be loaded on Pilothouse's browsers",
    "PWA": "installing web apps is not available on Pilothouse's browsers",
}
DOWNLOAD_METHODS = frozenset({"Browser.setDownloadBehavior", "Page.setDownloadBehavior"})
CDP_REFUSED_CODE = -32000


@dataclass(frozen=True)
class Verdict:
    """What the relay does with one client message: send `forward` on, or answer `reply` (a CDP error) itself."""

    forward: str | None
    reply: str | None = None
    refusal: str | None = None


def refusal_of(message: dict[str, Any]) -> str | None:
    method = message.get("method")
    if not isinstance(method, str):
        return None
    given = message.get("params")
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    if method in REFUSED_METHODS:
        return REFUSED_METHODS[method]
    domain = method.split(".", 1)[0]
    if domain in REFUSED_DOMAINS:
        return REFUSED_DOMAINS[domain]
    if method == "Target.createBrowserContext" and (params.get("proxyServer") or params.get("proxyBypassList")):
        return "a context's own proxy would go past the egress guard: give the session a workspace proxy instead"
    if method in ("Page.navigate", "Target.createTarget"):
        url = params.get("url")
        if isinstance(url, str) and url and urlsplit(url.strip()).scheme.lower() not in OPEN_SCHEMES:
            return f"pages open at http(s), about:, data: or blob: URLs only, not {url.split(':', 1)[0][:20]}:"
    return None


def check_client_message(text: str, download_dir: str) -> Verdict:
    """The rules every command from a client passes on its way to the worker's browser."""
    try:
        message = json.loads(text)
    except ValueError:
        return Verdict(forward=text)  # Chromium answers what it cannot parse
    if not isinstance(message, dict):
        return Verdict(forward=text)
    refusal = refusal_of(message)
    if refusal is not None:
        error: dict[str, Any] = {"id": message.get("id"), "error": {"code": CDP_REFUSED_CODE, "message": refusal}}
        if "sessionId" in message:
            error["sessionId"] = message["sessionId"]
        return Verdict(forward=None, reply=json.dumps(error), refusal=refusal)
    if message.get("method") in DOWNLOAD_METHODS and isinstance(message.get("params"), dict):
        params = dict(message["params"])
        if "downloadPath" in params or params.get("behavior") in ("allow", "allowAndName"):
            # a client's path names a folder on its own machine, or one of the worker's: downloads go to the session's
            if download_dir:
                params["downloadPath"] = download_dir
            else:
                params = {**params, "behavior": "deny"}
                params.pop("downloadPath", None)
            return Verdict(forward=json.dumps({**message, "params": params}))
    return Verdict(forward=text)


# --- a minimal websocket client (RFC 6455): text and binary messages, fragments, ping, close ------------------------

OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
HANDSHAKE_TIMEOUT_SECONDS = 15.0


class HandshakeRefused(Exception):
    """The server did not switch protocols: its status line says why."""


class WebSocketClient:
    """One client connection: `connect`, then `send` and `receive` messages; `close` ends it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._send_lock = asyncio.Lock()

    @classmethod
    async def connect(cls, host: str, port: int, path: str) -> WebSocketClient:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, limit=1024 * 1024), HANDSHAKE_TIMEOUT_SECONDS
        )
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANDSHAKE_TIMEOUT_SECONDS)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as error:
            writer.close()
            raise HandshakeRefused("the server closed the connection during the handshake") from error
        status = head.split(b"\r\n", 1)[0].decode("latin-1")
        if " 101 " not in f"{status} ":
            writer.close()
            raise HandshakeRefused(status)
        return cls(reader, writer)

    async def send(self, data: str | bytes) -> None:
        if isinstance(data, str):
            await self._send_frame(OP_TEXT, data.encode())
        else:
            await self._send_frame(OP_BINARY, data)

    async def _send_frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | length)
        elif length < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload)) if length < 4096 else _mask(payload, mask)
        async with self._send_lock:
            self.writer.write(head + mask + masked)
            await self.writer.drain()

    async def receive(self) -> str | bytes | None:
        """The next message, or None once the server closed the connection."""
        parts: list[bytes] = []
        message_opcode = None
        size = 0
        while True:
            try:
                first, second = await self.reader.readexactly(2)
                length = second & 0x7F
                if length == 126:
                    (length,) = struct.unpack("!H", await self.reader.readexactly(2))
                elif length == 127:
                    (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
                mask = await self.reader.readexactly(4) if second & 0x80 else b""
                if size + length > MAX_MESSAGE_BYTES:
                    return None
                payload = await self.reader.readexactly(length)
            except (asyncio.IncompleteReadError, ConnectionError):
                return None
            if mask:
                payload = _mask(payload, mask)
            opcode, final = first & 0x0F, bool(first & 0x80)
            if opcode == OP_CLOSE:
                return None
            if opcode == OP_PING:
                await self._send_frame(OP_PONG, payload)
                continue
            if opcode == OP_PONG:
                continue
            if opcode != OP_CONTINUATION:
                message_opcode = opcode
            parts.append(payload)
            size += length
            if final:
                data = b"".join(parts)
                return data.decode("utf-8", "replace") if message_opcode == OP_TEXT else data

    async def close(self) -> None:
        try:
            await self._send_frame(OP_CLOSE, struct.pack("!H", 1000))
        except (ConnectionError, RuntimeError):
            pass
        self.writer.close()


def _mask(payload: bytes, mask: bytes) -> bytes:
    """XOR with the 4-byte mask, on whole integers (a byte at a time is slow for a screenshot's megabytes)."""
    length = len(payload)
    repeated = (mask * (length // 4 + 1))[:length]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(length, "big")
