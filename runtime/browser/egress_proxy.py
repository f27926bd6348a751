"""The worker's egress proxy: every connection of a run's browser context goes through it and is checked on the
address it actually connects to, so redirect hops, subresources, websockets and rebinding DNS answers obey the policy.

Why our own ~250 lines and not a package: proxy.py and mitmproxy are whole servers with their own processes, threads
and TLS machinery; what is needed here is a plain forward proxy (HTTP absolute-form and CONNECT, no interception) that
lives on the BrowserHost's event loop, asks the run's NetworkGuard before each connection and connects to exactly the
address it checked. One listener per BrowserContext (on 127.0.0.1, a random port) tells it which run's policy applies.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from typing import Any
from urllib.parse import urlsplit

from agent_platform.netpolicy import BlockedRequest
from runtime.browser.network_guard import NetworkGuard, ProxyFailure
from runtime.browser.upstream import UpstreamDialer, UpstreamProxyError

log = logging.getLogger(__name__)

HEAD_MAX_BYTES = 32 * 1024
HEAD_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 15.0
IDLE_TIMEOUT_SECONDS = 300.0  # a websocket may sit quiet for a while
MAX_CONNECTIONS = 64  # per context: Chromium opens at most 6 per host and a few dozen in all
MAX_BYTES_PER_CONNECTION = 512 * 1024 * 1024
CHUNK = 64 * 1024
REFUSED_HEADER = "X-Pilothouse-Refused"
PROXY_ERROR_HEADER = "X-Pilothouse-Proxy-Error"
HOP_BY_HOP = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})


class ProxyRequest:
    """The head of one request the browser sent to the proxy."""

    def __init__(self, method: str, target: str, version: str, headers: list[tuple[str, str]]) -> None:
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers

    def header(self, name: str) -> str:
        return next((value for key, value in self.headers if key.lower() == name), "")


class EgressProxy:
    """A forward proxy for one BrowserContext, enforcing one NetworkGuard. Start it on the loop that will serve it."""

    def __init__(
        self,
        guard: NetworkGuard,
        *,
        upstream: UpstreamDialer | None = None,
        max_connections: int = MAX_CONNECTIONS,
        max_bytes: int = MAX_BYTES_PER_CONNECTION,
    ) -> None:
        self.guard = guard
        # the run's own upstream proxy: each connection the guard allowed goes through it, to the checked address
        self.upstream = upstream
        self.max_bytes = max_bytes
        self._slots = asyncio.Semaphore(max_connections)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> EgressProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, limit=HEAD_MAX_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if self._slots.locked():
                await respond(writer, 503, "Too many connections through the egress proxy.")
                return
            async with self._slots:
                await self._serve(reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # closed with its context: end quietly (asyncio logs a cancelled connection task as an error)
        except Exception:
            log.warning("the egress proxy failed on a connection", exc_info=True)
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await read_head(reader)
        if request is None:
            return
        if request.method == "CONNECT":
            host, port = split_authority(request.target, default_port=443)
            shown = f"{host}:{port}"
        else:
            parts = urlsplit(request.target)
            if parts.scheme not in ("http", "ws") or not parts.hostname:
                await respond(writer, 400, "The egress proxy takes absolute http:// URLs and CONNECT only.")
                return
            host, port = parts.hostname, parts.port or 80
            shown = request.target
        destination = await self.guard.destination(host, port)
        if destination.refusal is not None:
            self.guard.record(BlockedRequest(url=shown, reason=destination.refusal, is_navigation=False, by_proxy=True))
            await respond(writer, 403, f"Refused by the network policy: {destination.refusal}.", destination.refusal)
            return
        if self.upstream is not None:
            try:
                upstream = await self.upstream.open(destination.addresses, port)
            except UpstreamProxyError as error:
                proxy = self.upstream.address
                self.guard.record_proxy_failure(
                    ProxyFailure(proxy=proxy, reason=error.reason, destination=f"{host}:{port}")
                )
                message = f"The upstream proxy {proxy} failed: {error.reason}."
                await respond(writer, 502, message, proxy_error=error.reason)
                return
        else:
            direct = await connect_first(destination.addresses, port)
            if direct is None:
                await respond(writer, 502, f"Could not connect to {host}:{port}.")
                return
            upstream = direct
        up_reader, up_writer = upstream
        try:
            if request.method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
            else:
                up_writer.write(origin_form_head(request))
                await up_writer.drain()
            budget = Budget(self.max_bytes)
            to_upstream = asyncio.ensure_future(pipe(reader, up_writer, budget))
            keep_alive = request.method == "CONNECT" or bool(request.header("upgrade"))
            to_browser = asyncio.ensure_future(pipe(up_reader, writer, budget, close_responses=not keep_alive))
            # the response side decides: when the server is done, so is the connection
            await asyncio.wait({to_upstream, to_browser}, return_when=asyncio.FIRST_COMPLETED)
            if to_upstream.done() and not to_browser.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(to_browser), IDLE_TIMEOUT_SECONDS)
            for task in (to_upstream, to_browser):
                task.cancel()
            await asyncio.gather(to_upstream, to_browser, return_exceptions=True)
        finally:
            up_writer.close()


class Budget:
    """The bytes one proxied connection may still move, both directions together."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def spend(self, size: int) -> bool:
        self.left -= size
        return self.left >= 0


async def read_head(reader: asyncio.StreamReader) -> ProxyRequest | None:
    """The request line and headers, or None when the browser closed the connection first."""
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_SECONDS)
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise ValueError("malformed request line")
    headers = []
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers.append((name.strip(), value.strip()))
    return ProxyRequest(parts[0].upper(), parts[1], parts[2], headers)


def split_authority(authority: str, default_port: int) -> tuple[str, int]:
    """`host:port`, `[v6]:port` or `host` → (host, port)."""
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else default_port
    host, _, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "")
    return (host, int(port)) if port else (authority, default_port)


def origin_form_head(request: ProxyRequest) -> bytes:
    """The request as the origin server expects it: path only, no proxy headers, one request per connection."""
    parts = urlsplit(request.target)
    path = parts.path or "/"
    if parts.query:
        path = f"{path}?{parts.query}"
    lines = [f"{request.method} {path} {request.version}"]
    upgrade = request.header("upgrade")
    for name, value in request.headers:
        if name.lower() not in HOP_BY_HOP:
            lines.append(f"{name}: {value}")
    # The browser may reuse a proxy connection for another host: one request per upstream connection prevents that.
    lines.append("Connection: Upgrade" if upgrade else "Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def connect_first(
    addresses: tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...], port: int
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
    """A connection to the first of the checked addresses that answers (never a fresh DNS lookup)."""
    for address in addresses:
        try:
            return await asyncio.wait_for(asyncio.open_connection(str(address), port), CONNECT_TIMEOUT_SECONDS)
        except (OSError, TimeoutError):
            continue
    return None


async def pipe(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, budget: Budget, *, close_responses: bool = False
) -> None:
    """Copy bytes until EOF, idle timeout or the byte budget. With `close_responses`, the first response head is
    rewritten to `Connection: close`, so the browser does not send another request down this connection."""
    first = close_responses
    while True:
        chunk = await asyncio.wait_for(source.read(CHUNK), IDLE_TIMEOUT_SECONDS)
        if not chunk:
            break
        if first:
            first = False
            chunk = await closing_response_head(source, chunk)
        if not budget.spend(len(chunk)):
            log.warning("the egress proxy cut a connection at its byte limit")
            break
        sink.write(chunk)
        await sink.drain()
    with contextlib.suppress(OSError, RuntimeError):
        if sink.can_write_eof():
            sink.write_eof()


async def closing_response_head(source: asyncio.StreamReader, chunk: bytes) -> bytes:
    while b"\r\n\r\n" not in chunk and len(chunk) < HEAD_MAX_BYTES:
        more = await asyncio.wait_for(source.read(CHUNK), IDLE_TIMEOUT_SECONDS)
        if not more:
            return chunk
        chunk += more
    head, separator, rest = chunk.partition(b"\r\n\r\n")
    if not separator:
        return chunk
    lines = [
        line
        for line in head.split(b"\r\n")
        if line.split(b":", 1)[0].strip().lower().decode("latin-1") not in HOP_BY_HOP
    ]
    lines += [b"Connection: close", b"Proxy-Connection: close"]
    return b"\r\n".join(lines) + separator + rest


async def respond(
    writer: asyncio.StreamWriter, status: int, message: str, refusal: str | None = None, proxy_error: str | None = None
) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 503: "Service Unavailable"}
    body = (
        "<!doctype html><html><head><meta charset='utf-8'><title>Refused</title></head><body><p>"
        + message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        + "</p></body></html>"
    ).encode()
    head = [
        f"HTTP/1.1 {status} {reasons.get(status, 'Error')}",
        "Content-Type: text/html; charset=utf-8",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    if refusal is not None:
        head.append(f"{REFUSED_HEADER}: {refusal.encode('ascii', 'replace').decode()}")
    if proxy_error is not None:
        head.append(f"{PROXY_ERROR_HEADER}: {proxy_error.encode('ascii', 'replace').decode()}")
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
