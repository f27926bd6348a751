"""A tunnel through a workspace's upstream proxy to an address the egress guard already checked: HTTP CONNECT (over
TLS to the proxy itself for https://, with Basic credentials when the URL has them) or SOCKS5 (RFC 1928, with
username/password authentication, RFC 1929). Every step is bounded in time, and a failure says what the proxy did.

Why the checked address and not the name: the guard resolved the name and checked every address it got; a name sent
on would be resolved again by the proxy, perhaps to an internal address of the proxy's own network, where no check
of ours reaches. So the proxy is asked for the address, and the browser's TLS inside the tunnel still names the host
(SNI and certificate checks are the browser's, end to end)."""

from __future__ import annotations

import asyncio
import base64
import ssl
import struct

from agent_platform.lib.text import first_line
from agent_platform.netpolicy import IPAddress, NetworkPolicy
from runs.proxies import UpstreamProxy

HEAD_MAX_BYTES = 16 * 1024
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]

SOCKS_REPLIES = {
    1: "a general SOCKS server failure",
    2: "the connection is not allowed by its rules",
    3: "the network is unreachable",
    4: "the host is unreachable",
    5: "the destination refused the connection",
    6: "the TTL expired",
    7: "the CONNECT command is not supported",
    8: "the address type is not supported",
}


class UpstreamProxyError(Exception):
    """The upstream proxy could not give a tunnel. `reason` is for the agent and the operator (never credentials);
    `about_destination` is true when the proxy itself worked but could not reach that one address."""

    def __init__(self, reason: str, *, about_destination: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.about_destination = about_destination


class UpstreamDialer:
    """Opens tunnels through one upstream proxy for one run's egress proxy."""

    def __init__(self, upstream: UpstreamProxy, *, timeout: float, policy: NetworkPolicy) -> None:
        self.upstream = upstream
        self.timeout = timeout
        # where the proxy itself may be (PROXY_ALLOWED_PRIVATE_HOSTS), resolved and checked on every connection
        self.policy = policy

    @property
    def address(self) -> str:
        return self.upstream.address

    async def open(self, addresses: tuple[IPAddress, ...], port: int) -> Stream:
        """A tunnel to the first of the checked `addresses` the proxy reaches (IPv4 first: most proxies are)."""
        ordered = sorted(addresses, key=lambda address: address.version)
        last: UpstreamProxyError | None = None
        for address in ordered:
            try:
                return await self.tunnel(address, port)
            except UpstreamProxyError as error:
                if not error.about_destination:
                    raise
                last = error
        raise last or UpstreamProxyError("no address to connect to", about_destination=True)

    async def tunnel(self, address: IPAddress, port: int) -> Stream:
        reader, writer = await self.connect()
        try:
            if self.upstream.scheme == "socks5":
                await asyncio.wait_for(self.socks5(reader, writer, address, port), self.timeout)
            else:
                await asyncio.wait_for(self.http_connect(reader, writer, address, port), self.timeout)
        except TimeoutError:
            writer.close()
            raise UpstreamProxyError(f"the proxy did not answer its handshake within {self.timeout:g} s") from None
        except (OSError, asyncio.IncompleteReadError) as error:
            writer.close()
            raise UpstreamProxyError(
                f"the proxy closed the connection during its handshake ({error_name(error)})"
            ) from None
        except UpstreamProxyError:
            writer.close()
            raise
        return reader, writer

    async def connect(self) -> Stream:
        """A connection to the proxy itself (TLS for https://), at an address its policy allows."""
        upstream = self.upstream
        where = await self.policy.destination(upstream.host, upstream.port)
        if where.refusal is not None:
            raise UpstreamProxyError(f"the proxy's own address is refused: {where.refusal}")
        context = ssl.create_default_context() if upstream.scheme == "https" else None
        problem = "it did not answer"
        for proxy_address in where.addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(
                        str(proxy_address),
                        upstream.port,
                        ssl=context,
                        server_hostname=upstream.host if context else None,
                        limit=HEAD_MAX_BYTES * 4,
                    ),
                    self.timeout,
                )
            except TimeoutError:
                problem = f"it did not accept a connection within {self.timeout:g} s"
            except ssl.SSLError as error:
                problem = f"TLS to the proxy failed: {error.reason or first_line(error)}"
            except ConnectionRefusedError:
                problem = "it refused the connection (nothing listens there)"
            except OSError as error:
                problem = f"it could not be reached ({error_name(error)})"
        raise UpstreamProxyError(f"could not connect to the proxy: {problem}")

    async def http_connect(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: IPAddress, port: int
    ) -> None:
        target = f"[{address}]:{port}" if address.version == 6 else f"{address}:{port}"
        lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
        if self.upstream.has_credentials:
            token = base64.b64encode(f"{self.upstream.username}:{self.upstream.password}".encode()).decode()
            lines.append(f"Proxy-Authorization: Basic {token}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise UpstreamProxyError("the proxy answered CONNECT with an over-long head") from None
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise UpstreamProxyError("the proxy's answer to CONNECT is not HTTP")
        status = int(parts[1])
        words = printable(parts[2] if len(parts) > 2 else "")
        if 200 <= status < 300:
            return
        if status == 407:
            if self.upstream.has_credentials:
                raise UpstreamProxyError("the proxy refused the credentials (407 Proxy Authentication Required)")
            raise UpstreamProxyError("the proxy asks for credentials (407) and its URL has none")
        # 502, 503, 504: the proxy worked, the destination did not answer it
        raise UpstreamProxyError(
            f"the proxy refused the tunnel to {target} ({status} {words})".rstrip(), about_destination=status >= 500
        )

    async def socks5(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: IPAddress, port: int
    ) -> None:
        upstream = self.upstream
        methods = b"\x00\x02" if upstream.has_credentials else b"\x00"
        writer.write(b"\x05" + bytes([len(methods)]) + methods)
        await writer.drain()
        version, method = await reader.readexactly(2)
        if version != 5:
            raise UpstreamProxyError("the proxy does not speak SOCKS5")
        if method == 0xFF:
            if upstream.has_credentials:
                raise UpstreamProxyError("the SOCKS5 proxy accepts none of the offered authentication methods")
            raise UpstreamProxyError("the SOCKS5 proxy asks for credentials and its URL has none")
        if method == 0x02:
            if not upstream.has_credentials:
                raise UpstreamProxyError("the SOCKS5 proxy chose password authentication, which was not offered")
            user, password = upstream.username.encode(), upstream.password.encode()
            writer.write(b"\x01" + bytes([len(user)]) + user + bytes([len(password)]) + password)
            await writer.drain()
            try:
                _, status = await reader.readexactly(2)
            except asyncio.IncompleteReadError:
                # RFC 1929 asks for a status first, but some servers (pproxy) just hang up on a wrong password
                raise UpstreamProxyError(
                    "the SOCKS5 proxy refused the credentials (it closed the connection)"
                ) from None
            if status != 0:
                raise UpstreamProxyError("the SOCKS5 proxy refused the credentials")
        elif method != 0x00:
            raise UpstreamProxyError(f"the SOCKS5 proxy chose an authentication method that was not offered ({method})")
        kind, packed = (b"\x01", address.packed) if address.version == 4 else (b"\x04", address.packed)
        writer.write(b"\x05\x01\x00" + kind + packed + struct.pack("!H", port))
        await writer.drain()
        version, reply, _, bound_kind = await reader.readexactly(4)
        if version != 5:
            raise UpstreamProxyError("the proxy's answer to CONNECT is not SOCKS5")
        if reply != 0:
            said = SOCKS_REPLIES.get(reply, f"reply code {reply}")
            raise UpstreamProxyError(
                f"the SOCKS5 proxy could not connect to {address}:{port}: {said}",
                about_destination=reply in (3, 4, 5, 6),
            )
        # the address the proxy bound, which a CONNECT client reads and has no use for
        if bound_kind == 1:
            await reader.readexactly(4 + 2)
        elif bound_kind == 4:
            await reader.readexactly(16 + 2)
        elif bound_kind == 3:
            (length,) = await reader.readexactly(1)
            await reader.readexactly(length + 2)
        else:
            raise UpstreamProxyError("the SOCKS5 proxy's answer has an unknown address type")


def printable(text: str) -> str:
    return "".join(ch for ch in text if ch.isprintable())[:100]


def error_name(error: BaseException) -> str:
    return first_line(error)
