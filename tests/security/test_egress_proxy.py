"""The egress proxy with real Chromium and real servers: redirect hops, rebinding DNS answers and websockets are
checked on the address actually connected to, and allowances are scoped to a port.

No DNS here, and only loopback addresses may be contacted: a test resolver maps the "public" names to 127.0.0.2,
which these tests' address classification declares public; the private servers listen on 127.0.0.1.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import ipaddress
import socketserver
import threading
import urllib.parse
import wsgiref.simple_server
from collections.abc import Iterator
from typing import Any

import pytest
from anthropic.tools import ToolError
from anthropic.tools.browser import BetaToolsetCallContext

from agent_platform.netpolicy import address_class, parse_allowance
from demo_site import server as demo_server
from runtime.browser.host import BrowserHost
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.toolset import PlaywrightBrowserToolset
from tests.support import browsers

host = browsers.host  # the module's browser host (a fixture)

pytestmark = pytest.mark.browser

PUBLIC_ADDRESS = "127.0.0.2"
REFUSED = "Navigation refused by the network policy"


def classify(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """The real classification, except that 127.0.0.2 plays a public address on the internet."""
    return None if str(address) == PUBLIC_ADDRESS else address_class(address)


class Recorder(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], pages: dict[str, tuple[int, dict[str, str], str]]) -> None:
        super().__init__(address, RecordingHandler)
        self.pages = pages
        self.seen: list[str] = []

    @property
    def port(self) -> int:
        return self.server_address[1]


class RecordingHandler(http.server.BaseHTTPRequestHandler):
    server: Recorder

    def do_GET(self) -> None:
        self.server.seen.append(self.path)
        status, headers, body = self.server.pages.get(self.path, (404, {}, "not here"))
        data = body.encode()
        self.send_response(status)
        for name, value in {"content-type": "text/html; charset=utf-8", **headers}.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class WebSocketServer(socketserver.ThreadingTCPServer):
    """Answers a websocket handshake and holds the connection: enough for a page's `onopen` to fire."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, WebSocketHandler)
        self.connections = 0

    @property
    def port(self) -> int:
        return self.server_address[1]


class WebSocketHandler(socketserver.StreamRequestHandler):
    server: WebSocketServer

    def handle(self) -> None:
        self.server.connections += 1
        headers = {}
        while (line := self.rfile.readline().decode("latin-1").strip()) != "":
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        key = headers.get("sec-websocket-key", "") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()  # noqa: S324  (the protocol's hash)
        self.wfile.write(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept}\r\n\r\n".encode()
        )
        self.rfile.read(2)  # hold the connection until the browser closes it


def serve(server: socketserver.BaseServer) -> socketserver.BaseServer:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def servers() -> Iterator[dict[str, Any]]:
    secret = serve(Recorder(("127.0.0.1", 0), {"/secret": (200, {}, "<title>Secret</title><p>the admin page</p>")}))
    private_ws = serve(WebSocketServer(("127.0.0.1", 0)))
    public_ws = serve(WebSocketServer((PUBLIC_ADDRESS, 0)))
    secret_url = f"http://127.0.0.1:{secret.port}/secret"
    websocket_page = """<title>Sockets</title><script>
      window.outcome = (url) => new Promise(done => { const ws = new WebSocket(url);
        ws.onopen = () => done('open'); ws.onerror = () => done('error'); });
    </script>"""
    public = serve(
        Recorder(
            (PUBLIC_ADDRESS, 0),
            {
                "/": (200, {}, "<title>Shop</title><p>A public shop</p>"),
                "/redirect": (302, {"location": secret_url}, ""),
                "/sockets": (200, {}, websocket_page),
            },
        )
    )
    everything = {"secret": secret, "public": public, "private_ws": private_ws, "public_ws": public_ws}
    yield everything
    for server in everything.values():
        server.shutdown()
        server.server_close()


def toolset_for(
    host: BrowserHost, guard: NetworkGuard, *, proxy: bool = True, route: bool = True
) -> PlaywrightBrowserToolset:
    async def build() -> PlaywrightBrowserToolset:
        context = await host.new_context(network_guard=guard if proxy else None)
        toolset = PlaywrightBrowserToolset(context=context, network_guard=guard if route else None)
        if route:
            await toolset.install_guard()
        return toolset

    return host.run(build(), timeout=30)


def navigate(host: BrowserHost, toolset: PlaywrightBrowserToolset, url: str) -> list[dict[str, Any]]:
    return host.run(toolset.call(BetaToolsetCallContext(), "navigate", {"url": url}), timeout=60)


def public_guard(**kwargs: Any) -> NetworkGuard:
    return NetworkGuard(resolver=lambda name: [PUBLIC_ADDRESS], classify=classify, **kwargs)


def test_a_public_page_redirecting_to_a_loopback_secret_never_reaches_it(host: BrowserHost, servers) -> None:
    guard = public_guard()
    toolset = toolset_for(host, guard)
    try:
        with pytest.raises(ToolError, match=REFUSED) as refused:
            navigate(host, toolset, f"http://shop.test:{servers['public'].port}/redirect")
    finally:
        host.run(toolset.close(), timeout=30)

    assert servers["public"].seen == ["/redirect"]
    assert servers["secret"].seen == []  # the hop was refused by the proxy before any connection
    assert "127.0.0.1 is a loopback address" in str(refused.value.content)
    secret_url = f"http://127.0.0.1:{servers['secret'].port}/secret"
    assert any(blocked.by_proxy and blocked.url == secret_url for blocked in guard.blocked)


def test_without_the_proxy_the_same_redirect_reaches_the_secret(host: BrowserHost, servers) -> None:
    """The hole the proxy closes: the route alone cannot see a redirect hop, so the request goes out."""
    toolset = toolset_for(host, public_guard(), proxy=False)
    try:
        with pytest.raises(ToolError, match=REFUSED):  # detected after the fact, too late
            # Chromium resolves names itself without the proxy, and there is no DNS here: the public address it is
            navigate(host, toolset, f"http://{PUBLIC_ADDRESS}:{servers['public'].port}/redirect")
    finally:
        host.run(toolset.close(), timeout=30)

    assert servers["secret"].seen == ["/secret"]


def test_a_name_answering_public_then_private_reaches_no_private_server(host: BrowserHost, servers) -> None:
    secret = servers["secret"]
    answers = iter([[PUBLIC_ADDRESS]])
    # the first lookup (the route's) says public; every later one (the proxy's) says loopback
    guard = NetworkGuard(resolver=lambda name: next(answers, ["127.0.0.1"]), classify=classify)
    toolset = toolset_for(host, guard)
    try:
        with pytest.raises(ToolError, match=REFUSED) as refused:
            navigate(host, toolset, f"http://rebind.test:{secret.port}/secret")
    finally:
        host.run(toolset.close(), timeout=30)

    assert secret.seen == []
    assert "rebind.test resolves to 127.0.0.1, a loopback address" in str(refused.value.content)


def test_a_websocket_to_a_private_address_is_refused_by_the_proxy(host: BrowserHost, servers) -> None:
    guard = public_guard()
    # the proxy alone, without the route's websocket check: it is the layer under test
    toolset = toolset_for(host, guard, route=False)
    try:
        navigate(host, toolset, f"http://shop.test:{servers['public'].port}/sockets")
        page = toolset._tabs["tab_1"]
        private = host.run(page.evaluate("url => outcome(url)", f"ws://127.0.0.1:{servers['private_ws'].port}/"))
        public = host.run(page.evaluate("url => outcome(url)", f"ws://chat.test:{servers['public_ws'].port}/"))
    finally:
        host.run(toolset.close(), timeout=30)

    assert private == "error"
    assert servers["private_ws"].connections == 0
    assert public == "open"  # websockets do pass the proxy (CONNECT) when the policy allows them
    assert servers["public_ws"].connections == 1
    assert any(b.by_proxy and b.url == f"127.0.0.1:{servers['private_ws'].port}" for b in guard.blocked)


def test_an_allowance_with_a_port_opens_that_port_only(host: BrowserHost, servers, site: str) -> None:
    site_port = urllib.parse.urlsplit(site).port
    other = servers["secret"]
    guard = NetworkGuard(allowed_private_hosts=[f"127.0.0.1:{site_port}"])
    toolset = toolset_for(host, guard)
    try:
        allowed = navigate(host, toolset, f"{site}/second.html")
        with pytest.raises(ToolError, match=REFUSED) as refused:
            navigate(host, toolset, f"http://127.0.0.1:{other.port}/secret")
        # and through a redirect hop, which only the proxy sees before it connects
        with pytest.raises(ToolError, match=REFUSED):
            navigate(host, toolset, f"{site}/redirect?to={urllib.parse.quote(f'http://127.0.0.1:{other.port}/secret')}")
    finally:
        host.run(toolset.close(), timeout=30)

    assert "Second page" in str(allowed)
    assert f"127.0.0.1 is allowed on other ports only, not on port {other.port}" in str(refused.value.content)
    assert other.seen == []


def test_allowance_entries_name_hosts_ports_and_ranges() -> None:
    assert str(parse_allowance("LocalHost")) == "localhost"
    assert str(parse_allowance("127.0.0.1:8001")) == "127.0.0.1:8001"
    assert str(parse_allowance("10.1.0.0/16:443")) == "10.1.0.0/16:443"
    assert str(parse_allowance("[::1]:8001")) == "[::1]:8001"
    assert str(parse_allowance("::1")) == "::1"
    for wrong in ("127.0.0.1:http", "10.1.0.0/33", "a b", "host:0", ":8001"):
        with pytest.raises(ValueError):
            parse_allowance(wrong)

    ranged = NetworkGuard(allowed_private_hosts=["10.1.0.0/16:443"], resolver=lambda name: ["10.1.2.3"])
    host = BrowserHost(None)
    try:
        assert host.run(ranged.url_refusal("https://intranet.test/")) is None
        assert host.run(ranged.url_refusal("http://intranet.test/")) == (
            "intranet.test is allowed on other ports only, not on port 80"
        )
        assert host.run(ranged.url_refusal("https://10.2.0.1/")) == "10.2.0.1 is a private address"
        # a cloud metadata address is never re-opened, not even by an entry naming it
        metadata = NetworkGuard(allowed_private_hosts=["169.254.169.254", "169.254.0.0/16"])
        assert (
            host.run(metadata.url_refusal("http://169.254.169.254/")) == "169.254.169.254 is a cloud metadata address"
        )
    finally:
        host.close()


class ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_default_allowance_reaches_the_demo_shop_and_not_the_app(host: BrowserHost, settings) -> None:
    # what a default install allows: the demo site's own port on this machine, nothing else of it
    assert settings.BROWSER_ALLOWED_PRIVATE_HOSTS == ["127.0.0.1:8001", "localhost:8001"]
    demo = wsgiref.simple_server.make_server(
        "127.0.0.1", 0, demo_server.wsgi_application(), server_class=ThreadingWSGIServer, handler_class=QuietHandler
    )
    serve(demo)
    app = serve(Recorder(("127.0.0.1", 0), {"/admin/": (200, {}, "<title>Site administration</title>")}))
    demo_port = demo.server_address[1]
    defaults = [entry.replace(":8001", f":{demo_port}") for entry in settings.BROWSER_ALLOWED_PRIVATE_HOSTS]
    toolset = toolset_for(host, NetworkGuard(allowed_private_hosts=defaults))
    try:
        shop = navigate(host, toolset, f"http://127.0.0.1:{demo_port}/demo/shop/")
        with pytest.raises(ToolError, match=REFUSED) as refused:
            navigate(host, toolset, f"http://127.0.0.1:{app.port}/admin/")
        # the demo server itself has no admin to offer
        demo_admin = navigate(host, toolset, f"http://localhost:{demo_port}/admin/")
    finally:
        host.run(toolset.close(), timeout=30)
        demo.shutdown()
        demo.server_close()
        app.shutdown()
        app.server_close()

    assert "Shop, page 1 · Northwind Goods (HTTP 200)" in str(shop)
    assert f"not on port {app.port}" in str(refused.value.content)
    assert app.seen == []
    assert "Not Found (HTTP 404)" in str(demo_admin)
