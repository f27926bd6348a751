"""The address policy of everything the platform connects to on someone's behalf (agent browsers, webhooks): which
address classes are refused, which private hosts an operator re-opened, and why a URL is refused. No Playwright here:
the web process checks webhook URLs and settings with it; the worker's browser enforces it (runtime.browser)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import re
import socket
import time
from collections import deque
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

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
# Lookups block a thread each, and a name that does not resolve can hold one for seconds: they get threads of their
# own, so Chromium's calls home to unresolvable names cannot starve the event loop's default executor.
DNS_THREADS = concurrent.futures.ThreadPoolExecutor(max_workers=16, thread_name_prefix="egress-dns")
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


DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


def port_of(url: str) -> int | None:
    """The port a URL connects to (its scheme's default when it names none), or None for an unknown scheme."""
    parts = urlsplit(url)
    try:
        explicit = parts.port
    except ValueError:
        return None
    return explicit or DEFAULT_PORTS.get(parts.scheme.lower())


@dataclass(frozen=True)
class Allowance:
    """One entry of BROWSER_ALLOWED_PRIVATE_HOSTS: a host or an address range, on one port or on all of them.

    A host (`localhost`, `127.0.0.1:8001`, `[::1]:8001`) matches the host as written in the URL, so `127.0.0.1` does
    not also open `localhost`; a range (`10.1.0.0/16`, `10.1.0.0/16:443`) matches the address the connection
    actually goes to, whatever name led there.
    """

    name: str | None = None
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    port: int | None = None

    def allows(self, host: str, address: IPAddress | None, port: int | None, *, any_port: bool = False) -> bool:
        if self.port is not None and port != self.port and not any_port:
            return False
        if self.name is not None:
            return host == self.name
        return address is not None and self.network is not None and address in self.network

    def __str__(self) -> str:
        where = self.name or str(self.network)
        if self.port is None:
            return where
        return f"[{where}]:{self.port}" if ":" in where else f"{where}:{self.port}"


def parse_allowance(entry: str) -> Allowance:
    """`host`, `host:port`, `10.1.0.0/16`, `10.1.0.0/16:443`, `::1`, `[::1]:8001` → an Allowance (ValueError if not)."""
    text = entry.strip().lower()
    port: int | None = None
    if text.startswith("["):
        inside, _, rest = text[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"{entry!r} is not host, host:port, range or range:port")
            port = _port_number(rest[1:], entry)
        text = inside
    elif text.count(":") == 1:  # more than one colon is a bare IPv6 address
        text, _, port_text = text.partition(":")
        port = _port_number(port_text, entry)
    text = text.rstrip(".")
    if not text:
        raise ValueError(f"{entry!r} names no host")
    if "/" in text:
        try:
            return Allowance(network=ipaddress.ip_network(text, strict=False), port=port)
        except ValueError:
            raise ValueError(f"{entry!r} is not an address range") from None
    try:
        text = str(ipaddress.ip_address(text))  # one spelling of an address literal
    except ValueError:
        if not re.fullmatch(r"[a-z0-9_.-]+", text):
            raise ValueError(f"{entry!r} is neither a host name nor an address") from None
    return Allowance(name=text, port=port)


def _port_number(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{entry!r} has no valid port after the colon")
    return int(text)


@dataclass(frozen=True)
class Destination:
    """Where a connection may go: the addresses checked against the policy, or why it may not go anywhere."""

    addresses: tuple[IPAddress, ...] = ()
    refusal: str | None = None


@dataclass(frozen=True)
class BlockedRequest:
    """One request the guard refused, kept for diagnostics and for reporting a refused navigation."""

    url: str
    reason: str
    is_navigation: bool
    redirected: bool = False
    """True when the request already went out as a redirect hop: it could only be detected, not stopped."""
    by_proxy: bool = False
    """True when the egress proxy refused the connection (a redirect hop, a rebinding answer, a websocket)."""
    request: Any = field(default=None, compare=False, repr=False)
    """The browser's request (a Playwright Request) when the browser saw it; the policy never looks at it."""


class NetworkPolicy:
    """Decides which hosts an agent browser (or a webhook) may reach; the browser's NetworkGuard enforces it.

    Two independent rules:

    - address class: a host whose addresses are loopback, private, link-local, multicast, reserved, unspecified or a
      cloud metadata endpoint is refused, unless an entry of `allowed_private_hosts` allows it (see `Allowance`: a
      name as written in the URL, or an address range, each on one port or all); metadata addresses never are.
    - domains: when `allowed_domains` is given, a host must equal one of them or be a subdomain of one.

    Enforcement (runtime.browser.network_guard.NetworkGuard) has two layers. `install(context)` routes every request (resolving the host off the event loop) and
    websocket, and `url_policy` refuses a navigate before the driver runs: cheap, and the refusal names the URL. But
    Playwright does not route the hops of an HTTP redirect, and Chromium resolves a name again when it connects; so
    each context also goes through the worker's egress proxy (`runtime.browser.egress_proxy`), which asks `destination`
    for the addresses it may connect to, resolving afresh, and connects to exactly those.
    `classify` and `resolver` are injectable so tests can declare a loopback address "public" and answer DNS.
    """

    def __init__(
        self,
        *,
        allowed_private_hosts: Iterable[str] = (),
        allowed_domains: Iterable[str] | None = None,
        resolver: Callable[[str], list[str]] | None = None,
        classify: Callable[[IPAddress], str | None] | None = None,
    ) -> None:
        self.allowances = tuple(parse_allowance(entry) for entry in allowed_private_hosts if entry.strip())
        self.allowed_domains = (
            None
            if allowed_domains is None
            else frozenset(d.strip().lstrip(".").rstrip(".").lower() for d in allowed_domains)
        )
        self._resolver = resolver or resolve_host
        self._classify = classify or address_class
        self._cache: dict[tuple[str, int | None], tuple[float, str | None]] = {}
        self.blocked: deque[BlockedRequest] = deque(maxlen=200)
        self._unreported: deque[BlockedRequest] = deque(maxlen=200)
        self._listeners: list[Callable[[BlockedRequest], None]] = []
        self.refusal_count = 0
        self._reported: set[tuple[str, str]] = set()
        self._redirect_checks: set[asyncio.Future[None]] = set()

    @property
    def allowed_private_hosts(self) -> frozenset[str]:
        """The allowance entries as text (for messages and diagnostics)."""
        return frozenset(str(allowance) for allowance in self.allowances)

    def record(self, blocked: BlockedRequest) -> None:
        """Keep a refusal (for explanations and the run's `network.blocked` events) and tell the listeners."""
        self.blocked.append(blocked)
        self.refusal_count += 1
        # a page retrying one refused connection is one thing for the operator to read, not one event per try
        if (blocked.url, blocked.reason) not in self._reported:
            self._reported.add((blocked.url, blocked.reason))
            self._unreported.append(blocked)
        for listener in list(self._listeners):
            listener(blocked)

    def take_unreported(self) -> list[BlockedRequest]:
        """The refusals since the last call, oldest first: the loop turns them into `network.blocked` events."""
        taken = []
        while self._unreported:
            taken.append(self._unreported.popleft())
        return taken

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

    async def host_refusal(self, host: str, port: int | None = None) -> str | None:
        """Why a request to `host` (on `port`) is refused, or None. Resolves in a thread; answers are cached briefly:
        this is the cheap first layer, the egress proxy checks again on the address it connects to."""
        if not host:
            return "the URL has no host"
        key = (host, port)
        cached = self._cache.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        refusal = (await self.destination(host, port)).refusal
        self._cache[key] = (time.monotonic() + DNS_CACHE_SECONDS, refusal)
        return refusal

    async def destination(self, host: str, port: int | None) -> Destination:
        """The addresses a connection to `host`:`port` may use, resolved now (never cached), or why none may.

        Every address the name resolves to must pass, so the answer does not depend on which one a client picks.
        """
        host = host.strip("[]").rstrip(".").lower()
        if not host:
            return Destination(refusal="the URL has no host")
        refusal = self.domain_refusal(host)
        if refusal is not None:
            return Destination(refusal=refusal)
        try:
            addresses: tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...] = (
                ipaddress.ip_address(host.split("%", 1)[0]),
            )
            literal = True
        except ValueError:
            literal = False
            try:
                lookup = asyncio.get_running_loop().run_in_executor(DNS_THREADS, self._resolver, host)
                answer = await asyncio.wait_for(lookup, DNS_TIMEOUT_SECONDS)
                addresses = tuple(ipaddress.ip_address(text.split("%", 1)[0]) for text in answer)
            except (OSError, TimeoutError, UnicodeError, ValueError):
                return Destination(refusal=f"{host} could not be resolved")
            if not addresses:
                return Destination(refusal=f"{host} could not be resolved")
        written = str(addresses[0]) if literal else host  # an address literal has one spelling in the allowances
        name_allowed = any(
            allowance.name is not None and allowance.allows(written, None, port) for allowance in self.allowances
        )
        for address in addresses:
            refusal = self._address_refusal(host, written, address, port, name_allowed, literal)
            if refusal is not None:
                return Destination(refusal=refusal)
        return Destination(addresses=addresses)

    def _address_refusal(
        self, host: str, written: str, address: IPAddress, port: int | None, name_allowed: bool, literal: bool
    ) -> str | None:
        plain = getattr(address, "ipv4_mapped", None) or address
        described = f"{host} is" if literal else f"{host} resolves to {address},"
        if plain in CLOUD_METADATA_ADDRESSES:
            return f"{described} a cloud metadata address"  # never re-opened by an allowance, not even one naming it
        kind = self._classify(plain)
        if kind is None or name_allowed or any(allowance.allows(written, plain, port) for allowance in self.allowances):
            return None
        if any(allowance.allows(written, plain, port, any_port=True) for allowance in self.allowances):
            return f"{host} is allowed on other ports only, not on port {port}"
        return f"{described} {kind}"

    async def url_refusal(self, url: str) -> str | None:
        """Why the browser may not load `url`, or None. `about:blank` is always allowed; non-web schemes never are."""
        if url == "about:blank":
            return None
        scheme, host = host_of(url)
        if scheme not in WEB_SCHEMES:
            return f"the {scheme or 'empty'} scheme is not allowed"
        return await self.host_refusal(host, port_of(url))

    def navigation_refusal_since(self, count: int) -> str | None:
        """The reason of the latest refusal of a navigation or a proxied connection after the `count`-th refusal:
        what made a navigation fail when the refused URL was a redirect hop rather than the one asked for."""
        recent = list(self.blocked)[-(self.refusal_count - count) :] if self.refusal_count > count else []
        for blocked in reversed(recent):
            if blocked.is_navigation or blocked.by_proxy:
                return blocked.reason
        return None

    def last_refusal_for(self, url: str) -> str | None:
        """The reason of the most recent refusal of `url`, to explain a failed navigation. The proxy sees only
        `host:port` of an https or websocket connection, so its refusals match on that."""
        authority = f"{host_of(url)[1]}:{port_of(url)}"
        for blocked in reversed(self.blocked):
            if blocked.url.rstrip("/") == url.rstrip("/") or (blocked.by_proxy and blocked.url == authority):
                return blocked.reason
        return None


def resolve_host(host: str) -> list[str]:
    """Every address `host` resolves to (blocking: call it in a thread)."""
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)})


Decided = TypeVar("Decided")


def decide_now(check: Coroutine[Any, Any, Decided]) -> Decided:
    """A policy check's answer from synchronous code (an API view, a settings form): on this thread, or on a thread
    of its own when an event loop already runs here (nested loops are not allowed)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(check)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, check).result()
