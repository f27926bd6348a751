"""Egress policy for agent browsers: refuse requests to internal addresses and, optionally, to hosts off an allow-list."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from anthropic.tools import ToolError
from anthropic.tools.browser import BetaURLContext
from playwright.async_api import BrowserContext, Request, Route, WebSocketRoute

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud metadata endpoints (AWS/GCP/Azure, AWS IPv6, Alibaba). Most are non-global anyway; listed so the reason
# the model and the operator read names them, and so an allow-list entry can never re-open them.
CLOUD_METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(address) for address in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200")
)
WEB_SCHEMES = frozenset({"http", "https", "ws", "wss"})
DNS_TIMEOUT_SECONDS = 5.0
DNS_CACHE_SECONDS = 60.0
SCHEME_RE = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
OPAQUE_SCHEMES = frozenset({"about", "blob", "chrome", "data", "file", "javascript", "mailto", "tel", "view-source"})


def normalize_url(url: str) -> str:
    """The URL a navigate goes to: the model may omit the scheme, which then defaults to https (as the tool says)."""
    url = url.strip()
    if url.startswith("//"):
        return f"https:{url}"
    match = SCHEME_RE.match(url)
    # "localhost:8000/x" starts like a scheme, so only "scheme://" or a known opaque scheme counts as one
    if match and (url[match.end() :].startswith("//") or match.group(1).lower() in OPAQUE_SCHEMES):
        return url
    return f"https://{url}"


def address_class(address: IPAddress) -> str | None:
    """What kind of non-public address this is ("a loopback address"), or None for a public unicast address."""
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    if address in CLOUD_METADATA_ADDRESSES:
        return "a cloud metadata address"
    for label, flag in (
        ("loopback", address.is_loopback),
        ("private", address.is_private),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("reserved", address.is_reserved),
        ("unspecified", address.is_unspecified),
    ):
        if flag:
            return f"a {label} address"
    if not address.is_global:
        return "not a public address"
    return None


def host_of(url: str) -> tuple[str, str]:
    """(scheme, host) of a URL, lower-cased, the host without brackets or a trailing dot."""
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").rstrip(".").lower()


@dataclass(frozen=True)
class BlockedRequest:
    """One request the guard refused, kept for diagnostics and for reporting a refused navigation."""

    url: str
    reason: str
    is_navigation: bool
    redirected: bool = False
    """True when the request already went out as a redirect hop: it could only be detected, not stopped."""
    request: Request | None = field(default=None, compare=False, repr=False)


class NetworkGuard:
    """Decides which hosts an agent browser may reach and enforces it on a Playwright BrowserContext.

    Two independent rules:

    - address class: a host whose addresses are loopback, private, link-local, multicast, reserved, unspecified or a
      cloud metadata endpoint is refused, unless the host as written in the URL is in `allowed_private_hosts`
      (e.g. {"127.0.0.1", "localhost"} for a local demo site); the match is on the name, not the resolved address.
    - domains: when `allowed_domains` is given, a host must equal one of them or be a subdomain of one.

    Enforcement is `install(context)`: a route on every request (resolving the host off the event loop) and a
    websocket route; plus `url_policy`, the SDK hook that refuses a navigate before the driver runs.
    Known gap: Playwright does not route the hops of an HTTP redirect (not even of a fulfilled one), so a request
    to an allowed URL that redirects to an internal address goes out. The guard detects such hops after the fact
    (`BlockedRequest.redirected`) so the driver can refuse the navigation and leave the page; only egress rules around
    the worker can stop the request itself.
    """

    def __init__(
        self,
        *,
        allowed_private_hosts: Iterable[str] = (),
        allowed_domains: Iterable[str] | None = None,
        resolver: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.allowed_private_hosts = frozenset(
            host.strip().strip("[]").rstrip(".").lower() for host in allowed_private_hosts
        )
        self.allowed_domains = (
            None
            if allowed_domains is None
            else frozenset(d.strip().lstrip(".").rstrip(".").lower() for d in allowed_domains)
        )
        self._resolver = resolver or resolve_host
        self._cache: dict[str, tuple[float, str | None]] = {}
        self.blocked: deque[BlockedRequest] = deque(maxlen=200)
        self._redirect_checks: set[asyncio.Future[None]] = set()

    async def settle(self) -> None:
        """Wait for the redirect checks in flight, so a report made next includes their refusals."""
        if self._redirect_checks:
            await asyncio.gather(*list(self._redirect_checks), return_exceptions=True)

    def domain_refusal(self, host: str) -> str | None:
        """Why the host is outside `allowed_domains`, or None (also when no domain list is set)."""
        if self.allowed_domains is None:
            return None
        if any(host == domain or host.endswith(f".{domain}") for domain in self.allowed_domains):
            return None
        return f"{host} is not in the allowed domains"

    async def host_refusal(self, host: str) -> str | None:
        """Why a request to `host` is refused, or None. Resolves names in a thread; results are cached briefly."""
        if not host:
            return "the URL has no host"
        refusal = self.domain_refusal(host)
        if refusal is not None:
            return refusal
        if host in self.allowed_private_hosts:
            return None
        cached = self._cache.get(host)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        refusal = await self._address_class_refusal(host)
        self._cache[host] = (time.monotonic() + DNS_CACHE_SECONDS, refusal)
        return refusal

    async def _address_class_refusal(self, host: str) -> str | None:
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            kind = address_class(literal)
            return None if kind is None else f"{host} is {kind}"
        try:
            addresses = await asyncio.wait_for(asyncio.to_thread(self._resolver, host), DNS_TIMEOUT_SECONDS)
        except (OSError, TimeoutError, UnicodeError):
            return f"{host} could not be resolved"
        if not addresses:
            return f"{host} could not be resolved"
        # every address must pass: the browser may connect to any of them
        for text in addresses:
            kind = address_class(ipaddress.ip_address(text.split("%", 1)[0]))
            if kind is not None:
                return f"{host} resolves to {text}, {kind}"
        return None

    async def url_refusal(self, url: str) -> str | None:
        """Why the browser may not load `url`, or None. `about:blank` is always allowed; non-web schemes never are."""
        if url == "about:blank":
            return None
        scheme, host = host_of(url)
        if scheme not in WEB_SCHEMES:
            return f"the {scheme or 'empty'} scheme is not allowed"
        return await self.host_refusal(host)

    async def redirect_refusal(self, request: Request) -> str | None:
        """Why a redirect hop that led to `request` was not allowed, or None; the first request was routed already."""
        hop: Request | None = request
        while hop is not None and hop.redirected_from is not None:
            refusal = await self.url_refusal(hop.url)
            if refusal is not None:
                return f"a redirect led to {refusal}"
            hop = hop.redirected_from
        return None

    async def url_policy(self, context: BetaURLContext, url: str) -> None:
        """The SDK `url_policy`: refuses a navigate, with the reason, before the driver receives it."""
        refusal = await self.url_refusal(normalize_url(url))
        if refusal is not None:
            raise ToolError(f"Navigation refused by the network policy: {refusal}.")

    async def install(self, context: BrowserContext, on_block: Callable[[BlockedRequest], None] | None = None) -> None:
        """Route every request and websocket of `context` through the guard. `on_block` hears each refusal."""

        async def guard_request(route: Route, request: Request) -> None:
            refusal = await self.url_refusal(request.url)
            if refusal is None:
                await route.fallback()
                return
            blocked = BlockedRequest(url=request.url, reason=refusal, is_navigation=_is_main_frame_navigation(request))
            self.blocked.append(blocked)
            if on_block is not None:
                on_block(blocked)
            await route.abort("blockedbyclient")

        async def guard_websocket(websocket: WebSocketRoute) -> None:
            refusal = await self.url_refusal(websocket.url)
            if refusal is None:
                websocket.connect_to_server()
                return
            self.blocked.append(BlockedRequest(url=websocket.url, reason=refusal, is_navigation=False))
            await websocket.close(code=1008, reason="refused by the network policy")

        async def check_redirect(request: Request) -> None:
            refusal = await self.redirect_refusal(request)
            if refusal is None:
                return
            blocked = BlockedRequest(
                url=request.url,
                reason=refusal,
                is_navigation=_is_main_frame_navigation(request),
                redirected=True,
                request=request,
            )
            self.blocked.append(blocked)
            if on_block is not None:
                on_block(blocked)

        def watch_redirects(request: Request) -> None:
            if request.redirected_from is not None:
                pending = asyncio.ensure_future(check_redirect(request))
                self._redirect_checks.add(pending)
                pending.add_done_callback(self._redirect_checks.discard)

        context.on("request", watch_redirects)
        await context.route("**/*", guard_request)
        await context.route_web_socket(re.compile(r".*"), guard_websocket)

    def last_refusal_for(self, url: str) -> str | None:
        """The reason of the most recent refusal of `url`, to explain a failed navigation."""
        for blocked in reversed(self.blocked):
            if blocked.url.rstrip("/") == url.rstrip("/"):
                return blocked.reason
        return None


def _is_main_frame_navigation(request: Request) -> bool:
    try:
        return request.is_navigation_request() and request.frame.parent_frame is None
    except Exception:  # a request of a service worker or a detached frame has no frame to ask
        return False


def resolve_host(host: str) -> list[str]:
    """Every address `host` resolves to (blocking: call it in a thread)."""
    return sorted({info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})
