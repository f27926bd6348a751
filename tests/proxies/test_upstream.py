"""The egress guard forwarding through a real upstream proxy, with real Chromium in the test process: proxy.py (HTTP
CONNECT with Basic credentials, and over TLS) and pproxy (SOCKS5 with credentials). The guard checks first; a proxy
that refuses, is dead or hangs gives a clear navigation error within seconds, never a hang."""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from anthropic.tools import ToolError
from anthropic.tools.browser import BetaToolsetCallContext

from agent_platform.netpolicy import NetworkPolicy
from runs.proxies import UpstreamProxy, parse_proxy_url
from runtime.browser.egress_proxy import EgressProxy
from runtime.browser.host import BrowserHost
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.toolset import PlaywrightBrowserToolset
from runtime.browser.upstream import UpstreamDialer
from tests.support import browsers, upstream_proxies
from tests.support.sites import free_port
from tests.support.upstream_proxies import UpstreamServer

host = browsers.host

pytestmark = pytest.mark.browser

TIMEOUT = 2.0  # the proxy's connect and handshake bound, short for the tests


@pytest.fixture(scope="module")
def proxy_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("upstream-proxies")


@pytest.fixture(scope="module")
def http_proxy(proxy_dir) -> Iterator[UpstreamServer]:
    server = upstream_proxies.start_proxy_py(proxy_dir)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def socks_proxy(proxy_dir) -> Iterator[UpstreamServer]:
    server = upstream_proxies.start_pproxy(proxy_dir)
    yield server
    server.stop()


@pytest.fixture
def silent_port() -> Iterator[int]:
    yield from upstream_proxies.silent_listener()


def dialer(url: str) -> UpstreamDialer:
    # the proxies listen on loopback, which an operator allows for them as PROXY_ALLOWED_PRIVATE_HOSTS does
    return UpstreamDialer(
        parse_proxy_url(url), timeout=TIMEOUT, policy=NetworkPolicy(allowed_private_hosts=["127.0.0.1"])
    )


def toolset_through(host: BrowserHost, upstream: UpstreamDialer) -> PlaywrightBrowserToolset:
    guard = NetworkGuard(allowed_private_hosts={"127.0.0.1"})  # test pages on 127.0.0.1; `localhost` stays private

    async def build() -> PlaywrightBrowserToolset:
        context = await host.new_context(network_guard=guard, upstream=upstream)
        toolset = PlaywrightBrowserToolset(context=context, network_guard=guard)
        await toolset.install_guard()
        return toolset

    return host.run(build(), timeout=30)


def navigate(host: BrowserHost, toolset: PlaywrightBrowserToolset, url: str) -> str:
    """The navigate member's text, as the agent reads it (a failure's text included)."""
    try:
        content = host.run(toolset.call(BetaToolsetCallContext(), "navigate", {"url": url}), timeout=60)
    except ToolError as error:
        return str(error)
    return "\n".join(block.get("text", "") for block in content if block.get("type") == "text")


def close(host: BrowserHost, toolset: PlaywrightBrowserToolset) -> None:
    host.run(toolset.close(), timeout=30)


def test_a_page_is_reached_through_an_http_proxy_with_credentials(host, site, http_proxy) -> None:
    toolset = toolset_through(host, dialer(http_proxy.url()))
    try:
        text = navigate(host, toolset, f"{site}/index.html")
    finally:
        close(host, toolset)

    assert "failed" not in text and "refused" not in text
    port = site.rsplit(":", 1)[1]
    # the proxy carried it: its access log names the tunnel to the checked address
    assert f"CONNECT 127.0.0.1:{port}" in http_proxy.log


def test_a_page_is_reached_through_a_socks5_proxy_with_credentials(host, site, socks_proxy) -> None:
    toolset = toolset_through(host, dialer(socks_proxy.url()))
    try:
        text = navigate(host, toolset, f"{site}/index.html")
    finally:
        close(host, toolset)

    assert "failed" not in text and "refused" not in text
    assert f"-> 127.0.0.1:{site.rsplit(':', 1)[1]}" in socks_proxy.log


def test_a_private_destination_is_refused_before_the_proxy_is_asked(host, site, http_proxy, socks_proxy) -> None:
    port = site.rsplit(":", 1)[1]
    for proxy in (http_proxy, socks_proxy):
        toolset = toolset_through(host, dialer(proxy.url()))
        try:
            # `localhost` is loopback and not allowed, although either proxy could reach it
            text = navigate(host, toolset, f"http://localhost:{port}/index.html")
        finally:
            close(host, toolset)
        assert "Navigation refused by the network policy: localhost resolves to 127.0.0.1, a loopback address" in text
    assert "localhost" not in http_proxy.log and "localhost" not in socks_proxy.log


def test_the_guard_refuses_a_private_address_itself_even_with_an_upstream(site, http_proxy) -> None:
    """The egress proxy's own check (the layer under the browser's route): a CONNECT to a private address is refused
    with 403, and the upstream proxy never hears of it."""
    guard = NetworkGuard()  # no private host allowed

    async def connect() -> bytes:
        egress = await EgressProxy(guard, upstream=dialer(http_proxy.url())).start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", egress.port)
            target = f"127.0.0.1:{site.rsplit(':', 1)[1]}"
            writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            writer.close()
            return head
        finally:
            await egress.close()

    before = http_proxy.log.count("CONNECT 127.0.0.1")
    head = asyncio.run(connect())

    assert head.startswith(b"HTTP/1.1 403")
    assert http_proxy.log.count("CONNECT 127.0.0.1") == before


def test_a_connect_tunnel_through_the_guard_goes_upstream(site, http_proxy) -> None:
    """CONNECT (https, websockets) through the guard is a tunnel through the upstream proxy to the checked address."""
    guard = NetworkGuard(allowed_private_hosts={"127.0.0.1"})
    port = site.rsplit(":", 1)[1]

    async def fetch() -> bytes:
        egress = await EgressProxy(guard, upstream=dialer(http_proxy.url())).start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", egress.port)
            writer.write(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).startswith(b"HTTP/1.1 200")
            writer.write(f"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            body = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return body
        finally:
            await egress.close()

    before = http_proxy.log.count(f"CONNECT 127.0.0.1:{port}")
    body = asyncio.run(fetch())

    assert body.startswith(b"HTTP/1.") and b" 200 " in body.split(b"\r\n", 1)[0]
    assert http_proxy.log.count(f"CONNECT 127.0.0.1:{port}") == before + 1


def test_an_https_proxy_is_reached_over_tls(site, proxy_dir, monkeypatch) -> None:
    certificate, key = upstream_proxies.self_signed_certificate(proxy_dir)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))  # the one CA this test trusts (OpenSSL reads it)
    server = upstream_proxies.start_proxy_py(proxy_dir, tls=(certificate, key))
    port = int(site.rsplit(":", 1)[1])
    try:

        async def tunnel() -> bytes:
            reader, writer = await dialer(server.url()).open((ipaddress.ip_address("127.0.0.1"),), port)
            writer.write(f"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            body = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return body

        body = asyncio.run(tunnel())
    finally:
        server.stop()

    assert server.url().startswith("https://")
    assert b" 200 " in body.split(b"\r\n", 1)[0]
    assert f"CONNECT 127.0.0.1:{port}" in server.log


@pytest.mark.parametrize(
    "case",
    ["http wrong password", "socks5 wrong password", "http no credentials", "dead", "silent"],
)
def test_a_failing_proxy_is_a_clear_navigation_error_within_seconds(
    host, site, http_proxy, socks_proxy, silent_port, case
) -> None:
    url, expected = {
        "http wrong password": (
            http_proxy.url(password="wrong"),
            "the proxy refused the credentials (407 Proxy Authentication Required)",
        ),
        "socks5 wrong password": (socks_proxy.url(password="wrong"), "the SOCKS5 proxy refused the credentials"),
        "http no credentials": (f"http://127.0.0.1:{http_proxy.port}", "the proxy asks for credentials (407)"),
        "dead": (f"http://127.0.0.1:{free_port()}", "could not connect to the proxy: it refused the connection"),
        "silent": (f"socks5://127.0.0.1:{silent_port}", f"the proxy did not answer its handshake within {TIMEOUT:g} s"),
    }[case]
    upstream = dialer(url)
    toolset = toolset_through(host, upstream)
    started = time.monotonic()
    try:
        text = navigate(host, toolset, f"{site}/index.html")
        failures = list(toolset.network_guard.proxy_failures)
    finally:
        close(host, toolset)

    assert time.monotonic() - started < 15
    assert f"the run's upstream proxy {upstream.address} failed: {expected}" in text
    assert failures and failures[-1].reason.startswith(expected)
    assert "wrong" not in text and "pa55" not in text  # no credentials in what the agent reads
    assert isinstance(upstream.upstream, UpstreamProxy) and "password" not in repr(upstream.upstream)


def test_a_tool_error_names_the_proxy_and_not_its_credentials(host, site, http_proxy) -> None:
    with pytest.raises(ToolError) as raised:
        toolset = toolset_through(host, dialer(http_proxy.url(password="wrong")))
        try:
            host.run(toolset.open(f"{site}/index.html"), timeout=60)
        finally:
            close(host, toolset)
    assert f"http://127.0.0.1:{http_proxy.port}" in str(raised.value)
    assert upstream_proxies.HTTP_USER not in str(raised.value)
