"""A minimal websocket client over a plain TCP connection, as a browser's socket behaves: a Daphne's sockets read
from outside the test process (the live tests, the four-host test)."""

import asyncio
import base64
import json
import os
import struct


class Closed(Exception):
    pass


class WebSocket:
    """A minimal RFC 6455 client (text frames, close, and the pongs Daphne's keepalive pings expect), so the test
    sees exactly what a browser sees: a close frame or a dropped connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, port: int, path: str, session_cookie: str, host: str = "127.0.0.1") -> "WebSocket":
        reader, writer = await asyncio.open_connection(host, port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write(
            (
                f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://{host}:{port}\r\n"
                f"Cookie: sessionid={session_cookie}\r\n\r\n"
            ).encode()
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert head.startswith(b"HTTP/1.1 101"), head
        return cls(reader, writer)

    async def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        header = bytes([0x80 | opcode])
        length = len(payload)
        if length < 126:
            header += bytes([0x80 | length])
        else:
            header += bytes([0x80 | 126]) + struct.pack("!H", length)
        self.writer.write(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        await self.writer.drain()

    async def receive(self) -> dict:
        """The next text message as JSON; Closed on a close frame or the end of the connection."""
        while True:
            try:
                first, second = await self.reader.readexactly(2)
                length = second & 0x7F
                if length == 126:
                    (length,) = struct.unpack("!H", await self.reader.readexactly(2))
                elif length == 127:
                    (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
                payload = await self.reader.readexactly(length)
            except (asyncio.IncompleteReadError, ConnectionError) as error:
                raise Closed(f"connection ended: {error!r}") from None
            opcode = first & 0x0F
            if opcode == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                raise Closed(f"close frame, code {code}")
            if opcode == 0x9:
                await self._send(0xA, payload)
            elif opcode == 0x1:
                return json.loads(payload)

    async def close(self) -> None:
        self.writer.close()
