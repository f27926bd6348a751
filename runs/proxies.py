"""A workspace's own upstream proxies: a URL checked and sealed at rest (runs.secret_box, as run secrets are), shown
back without its credentials, chosen at launch, and opened by the worker whose egress guard forwards through it
(runtime.browser.upstream). See docs/proxies.md."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import InvalidRequest
from agent_platform.models import Workspace
from agent_platform.names import clean_name
from agent_platform.netpolicy import NetworkPolicy, decide_now

from .models import Proxy, proxy_address
from .secret_box import seal, unseal

URL_MAX_CHARS = 2000
NAME_MAX_CHARS = 100
# RFC 1929 carries each of the user name and password in one length byte; HTTP Basic has no limit, but one is kept.
CREDENTIAL_MAX_BYTES = 255
PROXIES_PER_WORKSPACE = 50
SCHEMES = ("http", "https", "socks5")
HOST_NAME = re.compile(
    r"^(?=.{1,253}$)([a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$"
)
CONTROL = re.compile(r"[\x00-\x20\x7f]")
SEALED_URL = "url"


@dataclass(frozen=True)
class UpstreamProxy:
    """A proxy URL taken apart. `password` never appears in its repr, so a log line or a traceback cannot show it."""

    scheme: str
    host: str
    port: int
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def has_credentials(self) -> bool:
        return bool(self.username)

    @property
    def address(self) -> str:
        return proxy_address(self.scheme, self.host, self.port)


def bad_url(message: str) -> InvalidRequest:
    # The message never repeats the URL: it may hold a password.
    return InvalidRequest.of_field("url", message)


def parse_proxy_url(url: object) -> UpstreamProxy:
    """`scheme://[user[:password]@]host:port` with scheme http, https or socks5, or InvalidRequest naming `url`.

    User name and password are percent-decoded (a `@` or `:` in them is written %40, %3A).
    """
    if not isinstance(url, str) or not url.strip():
        raise bad_url("is required: scheme://[user:password@]host:port with scheme http, https or socks5")
    url = url.strip()
    if len(url) > URL_MAX_CHARS:
        raise bad_url(f"is longer than {URL_MAX_CHARS} characters")
    if CONTROL.search(url):
        raise bad_url("must not contain spaces or control characters")
    scheme, separator, _ = url.partition("://")
    if not separator or scheme.lower() not in SCHEMES:
        shown = scheme.lower() if separator and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,20}", scheme) else ""
        got = f" (not {shown}://)" if shown else ""
        raise bad_url(f"must start with http://, https:// or socks5://{got}")
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname or ""
    except ValueError:
        raise bad_url("has a port that is not a number from 1 to 65535, or a malformed host") from None
    if not host:
        raise bad_url("names no host: scheme://[user:password@]host:port")
    if port is None or port == 0:
        raise bad_url("must name the proxy's port, as in http://proxy.example.com:3128")
    if parts.path not in ("", "/") or parts.query or parts.fragment or url.rstrip("/").endswith(("?", "#")):
        raise bad_url("must be only scheme://[user:password@]host:port, without a path, query or fragment")
    host = host.rstrip(".").lower()
    try:
        host = str(ipaddress.ip_address(host))
    except ValueError:
        if not HOST_NAME.match(host):
            raise bad_url("has a host that is neither a host name nor an IP address") from None
    username = unquote(parts.username or "")
    password = unquote(parts.password or "")
    if password and not username:
        raise bad_url("has a password without a user name")
    for label, value in (("user name", username), ("password", password)):
        if len(value.encode()) > CREDENTIAL_MAX_BYTES:
            raise bad_url(f"has a {label} longer than {CREDENTIAL_MAX_BYTES} bytes")
        if CONTROL.search(value.replace(" ", "")):
            raise bad_url(f"has a {label} with control characters")
    if ":" in username:
        raise bad_url("has a user name with a colon, which HTTP Basic cannot carry")
    return UpstreamProxy(scheme.lower(), host, port, username, password)


def proxy_policy() -> NetworkPolicy:
    """Where a proxy itself may be: a public address, or a private one PROXY_ALLOWED_PRIVATE_HOSTS lists (never a
    cloud metadata address). The destinations behind the proxy answer to the browser's policy, as always."""
    return NetworkPolicy(allowed_private_hosts=settings.PROXY_ALLOWED_PRIVATE_HOSTS)


def proxy_address_refusal(upstream: UpstreamProxy) -> str | None:
    """Why the worker may not connect to this proxy, or None (resolving its name now)."""
    return decide_now(proxy_policy().destination(upstream.host, upstream.port)).refusal


def create_proxy(workspace: Workspace, *, name: object, url: object, created_by: User | None = None) -> Proxy:
    """Add a proxy to the workspace; its URL is sealed before it is stored."""
    name = clean_name(name, NAME_MAX_CHARS)
    upstream = parse_proxy_url(url)
    refusal = proxy_address_refusal(upstream)
    if refusal is not None:
        raise bad_url(
            f"is refused: {refusal} (a proxy on a private address must be listed in PROXY_ALLOWED_PRIVATE_HOSTS "
            "by the installation's operator)"
        )
    if Proxy.objects.for_workspace(workspace).usable().count() >= PROXIES_PER_WORKSPACE:
        raise InvalidRequest.of_field("name", f"a workspace has at most {PROXIES_PER_WORKSPACE} proxies")
    return Proxy.objects.create(
        workspace=workspace,
        name=name,
        scheme=upstream.scheme,
        host=upstream.host,
        port=upstream.port,
        has_credentials=upstream.has_credentials,
        sealed_url=seal({SEALED_URL: str(url).strip()}),
        created_by=created_by,
    )


def delete_proxy(proxy: Proxy) -> None:
    """Forget the proxy's URL and credentials; the row stays, so the sessions that named it refuse to go out
    directly and their runs still say which proxy they had."""
    with transaction.atomic():
        Proxy.objects.filter(pk=proxy.pk).update(sealed_url={}, deleted_at=timezone.now())


def find_usable(workspace: Workspace, proxy_id: str) -> Proxy | None:
    return Proxy.objects.for_workspace(workspace).usable().filter(public_id=proxy_id).first()


def open_proxy(proxy: Proxy) -> UpstreamProxy:
    """The proxy's URL, unsealed: only the worker calls this, for the run it executes. Raises SecretsUnavailable
    when no configured key opens it, and ProxyGone when the proxy was deleted."""
    if proxy.deleted_at is not None or not proxy.sealed_url:
        raise ProxyGone(f"the run's proxy {proxy.public_id} ({proxy.name}) was deleted")
    return parse_proxy_url(unseal(proxy.sealed_url)[SEALED_URL])


class ProxyGone(Exception):
    """The session's proxy was deleted: its runs must not go out directly instead."""


def proxy_out(proxy: Proxy) -> dict[str, Any]:
    """What the API and the pages show of a proxy: never its credentials."""
    return {
        "id": proxy.public_id,
        "name": proxy.name,
        "scheme": proxy.scheme,
        "host": proxy.host,
        "port": proxy.port,
        "has_credentials": proxy.has_credentials,
        "created_at": proxy.created_at,
    }
