"""Egress policy for agent browsers, enforced: the address policy (agent_platform.netpolicy) on a Playwright
BrowserContext's requests, websockets and redirect hops, and as the SDK's url_policy before a navigate."""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from anthropic.tools import ToolError
from anthropic.tools.browser import BetaURLContext
from playwright.async_api import BrowserContext, Request, Route, WebSocketRoute

from agent_platform import metrics
from agent_platform.netpolicy import BlockedRequest, NetworkPolicy, normalize_url


@dataclass(frozen=True)
class ProxyFailure:
    """The run's upstream proxy could not give a tunnel to a destination the policy allowed."""

    proxy: str
    """scheme://host:port of the proxy, never its credentials."""
    reason: str
    destination: str


class NetworkGuard(NetworkPolicy):
    """The network policy of one run's browser, installed on its BrowserContext (`install`) and asked by the
    toolset before each navigate (`url_policy`); the egress proxy asks it (`destination`) before each connection,
    and tells it when the run's upstream proxy failed (`record_proxy_failure`)."""

    def __init__(self, **policy: Any) -> None:
        super().__init__(**policy)
        self.proxy_failures: deque[ProxyFailure] = deque(maxlen=50)
        self.proxy_failure_count = 0
        self._unreported_failures: deque[ProxyFailure] = deque(maxlen=50)
        self._reported_failures: set[tuple[str, str]] = set()

    def record_proxy_failure(self, failure: ProxyFailure) -> None:
        """Keep it for the agent's tool result and, once per destination and reason, a `network.proxy_error` event."""
        self.proxy_failures.append(failure)
        self.proxy_failure_count += 1
        if (failure.destination, failure.reason) not in self._reported_failures:
            self._reported_failures.add((failure.destination, failure.reason))
            self._unreported_failures.append(failure)

    def take_proxy_failures(self) -> list[ProxyFailure]:
        """The failures not yet reported, oldest first: the loop turns them into `network.proxy_error` events."""
        taken = []
        while self._unreported_failures:
            taken.append(self._unreported_failures.popleft())
        return taken

    def proxy_failure_since(self, count: int) -> ProxyFailure | None:
        """The latest proxy failure after the `count`-th one: why a navigation failed when the proxy was at fault."""
        if self.proxy_failure_count <= count or not self.proxy_failures:
            return None
        return self.proxy_failures[-1]

    def record(self, blocked: BlockedRequest) -> None:
        """A refusal of the browser's (a route's, a redirect hop's, the egress proxy's), counted for Prometheus."""
        metrics.egress_refusals.inc()
        super().record(blocked)

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
            metrics.egress_refusals.inc()
            self._unreported.append(BlockedRequest(url=normalize_url(url), reason=refusal, is_navigation=True))
            raise ToolError(f"Navigation refused by the network policy: {refusal}.")

    async def install(self, context: BrowserContext, on_block: Callable[[BlockedRequest], None] | None = None) -> None:
        """Route every request and websocket of `context` through the guard. `on_block` hears each refusal (the
        egress proxy's too)."""
        if on_block is not None:
            self._listeners.append(on_block)

        async def guard_request(route: Route, request: Request) -> None:
            # A blob: URL is bytes a page made in the browser (a generated file it offers as a download): nothing
            # leaves the machine, so it is judged by the origin that made it, which the page was loaded from.
            url = request.url
            checked = url[len("blob:") :] if url.lower().startswith("blob:") else url
            refusal = await self.url_refusal(checked)
            if refusal is None:
                await route.fallback()
                return
            self.record(
                BlockedRequest(url=request.url, reason=refusal, is_navigation=_is_main_frame_navigation(request))
            )
            await route.abort("blockedbyclient")

        async def guard_websocket(websocket: WebSocketRoute) -> None:
            refusal = await self.url_refusal(websocket.url)
            if refusal is None:
                websocket.connect_to_server()
                return
            self.record(BlockedRequest(url=websocket.url, reason=refusal, is_navigation=False))
            await websocket.close(code=1008, reason="refused by the network policy")

        async def check_redirect(request: Request) -> None:
            refusal = await self.redirect_refusal(request)
            if refusal is None:
                return
            self.record(
                BlockedRequest(
                    url=request.url,
                    reason=refusal,
                    is_navigation=_is_main_frame_navigation(request),
                    redirected=True,
                    request=request,
                )
            )

        def watch_redirects(request: Request) -> None:
            if request.redirected_from is not None:
                pending = asyncio.ensure_future(check_redirect(request))
                self._redirect_checks.add(pending)
                pending.add_done_callback(self._redirect_checks.discard)

        context.on("request", watch_redirects)
        await context.route("**/*", guard_request)
        await context.route_web_socket(re.compile(r".*"), guard_websocket)


def _is_main_frame_navigation(request: Request) -> bool:
    try:
        return request.is_navigation_request() and request.frame.parent_frame is None
    except Exception:  # a request of a service worker or a detached frame has no frame to ask
        return False
