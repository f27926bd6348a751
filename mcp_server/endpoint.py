"""/mcp over streamable HTTP: each request admitted by its API key (mcp_server.auth), then served by the SDK's session
manager, which runs inside a task group of its own although Daphne, which serves the web, has no ASGI lifespan.

The manager is stateless: every request stands alone (the SDK opens no session that a later request must reach on the
same process), so /mcp works across any number of web processes behind a load balancer, like the rest of the web.
"""

import asyncio
import json

import anyio
from channels.db import database_sync_to_async
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INVALID_REQUEST
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from agent_platform.errors import ServiceError

from . import person_tools  # noqa: F401  (its tools register on the server)
from .auth import SCOPE_KEY, McpRequest, admit
from .tools import refusal_text, server

# The SDK's DNS-rebinding check guards servers a web page could reach without credentials; /mcp answers nothing
# without an API key in the Authorization header, which no page can make a browser send, and no cookie opens it.
NO_REBINDING_CHECK = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def authorization_of(scope: Scope) -> str:
    return next((value.decode("latin-1") for name, value in scope["headers"] if name == b"authorization"), "")


def refused(error: ServiceError) -> Response:
    """A refused request as the MCP client reads it (a JSON-RPC error, whose message it raises) with the API's status,
    headers and envelope."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": INVALID_REQUEST,
            "message": refusal_text(error),
            "data": {"error": {"type": error.code, "message": error.message, "detail": error.detail}},
        },
    }
    return Response(json.dumps(body), status_code=error.status, headers=error.headers, media_type="application/json")


class McpEndpoint:
    """The ASGI application of /mcp: admission, then the SDK's streamable HTTP app, started on first use in the event
    loop serving it."""

    def __init__(self, mcp: MCPServer) -> None:
        self.mcp = mcp
        self.loop: asyncio.AbstractEventLoop | None = None
        self.app: ASGIApp | None = None
        self.ready = asyncio.Event()
        self.holder: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            request: McpRequest = await database_sync_to_async(admit)(authorization_of(scope))
        except ServiceError as error:
            await refused(error)(scope, receive, send)
            return
        app = await self.started()
        await app({**scope, SCOPE_KEY: request}, receive, send)

    async def started(self) -> ASGIApp:
        """The SDK's app, its session manager running. A manager runs once, in one loop: a process has one loop, but a
        test may serve from several in turn, so each new loop gets a manager of its own."""
        loop = asyncio.get_running_loop()
        if self.loop is not loop:
            self.loop, self.ready = loop, asyncio.Event()
            self.app = self.mcp.streamable_http_app(stateless_http=True, transport_security=NO_REBINDING_CHECK)
            self.holder = loop.create_task(self.hold(self.mcp, self.ready))
        await self.ready.wait()
        assert self.app is not None  # set with the loop above
        return self.app

    @staticmethod
    async def hold(mcp: MCPServer, ready: asyncio.Event) -> None:
        """Keep the session manager's task group open (the lifespan the SDK expects) for as long as the loop runs."""
        async with mcp.session_manager.run():
            ready.set()
            await anyio.sleep_forever()


application = McpEndpoint(server)
