"""The ASGI entry point: Django views and the API over HTTP, the MCP server at /mcp, Channels consumers over
websockets."""

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the app registry loaded above)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

from agent_platform import telemetry  # noqa: E402

# A web process exports its requests' spans when OTEL_EXPORTER_OTLP_ENDPOINT is set (telemetry.traced_request).
telemetry.configure(telemetry.WEB_SERVICE)

# The wiring names the apps' routes by dotted path, as ROOT_URLCONF and the URLconf's include() name their URLs: the
# platform package imports no app (agent_platform/ruff.toml).
websocket_urlpatterns = [
    *import_string("runs.routing.websocket_urlpatterns"),
    *import_string("browsers.routing.console_urlpatterns"),
]
browser_cdp_urlpatterns = import_string("browsers.routing.websocket_urlpatterns")
BROWSER_CDP_PREFIX = import_string("browsers.routing.CDP_PREFIX")
mcp_app = import_string("mcp_server.endpoint.application")
upload_too_large = import_string("runs.files.upload_too_large")
MCP_PATH = "/mcp"

# Static files come from the app itself unless a front proxy serves them; screenshots are never public files:
# they go through runs:screenshot, which checks the viewer's workspace.
django_http_app = ASGIStaticFilesHandler(django_asgi_app) if settings.SERVE_FILES else django_asgi_app


# The paths that take a file in their body (the files API, the launch form), and what a multipart body may add around
# the file itself. A body that declares more is refused here, before Django reads (and spools) any of it.
UPLOAD_PATHS = frozenset({"/api/v1/files", "/runs/new/"})
MULTIPART_OVERHEAD_BYTES = 64 * 1024


def declared_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def refuse_too_large(send: Callable[[Mapping[str, Any]], Awaitable[None]]) -> None:
    error = upload_too_large()
    body = json.dumps({"error": {"type": error.code, "message": error.message, "detail": error.detail}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send(
        {"type": "http.response.start", "status": error.status, "headers": [*headers, (b"connection", b"close")]}
    )
    await send({"type": "http.response.body", "body": body})


async def http_app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[Mapping[str, Any]], Awaitable[None]],
) -> None:
    """/mcp is the MCP SDK's own ASGI application (streamable HTTP); every other path is Django's. An upload that
    declares a body past the file limit is answered 413 at once."""
    if scope["path"] in UPLOAD_PATHS and scope.get("method") == "POST":
        length = declared_length(scope)
        if length is not None and length > settings.FILE_UPLOAD_MAX_BYTES + MULTIPART_OVERHEAD_BYTES:
            await refuse_too_large(send)
            return
    app = mcp_app if scope["path"] == MCP_PATH else django_http_app
    await app(scope, receive, send)


console_sockets = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
browser_cdp_sockets = URLRouter(browser_cdp_urlpatterns)


async def websocket_app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[Mapping[str, Any]], Awaitable[None]],
) -> None:
    """A browser session's CDP socket is a program's, authenticated by its token (browsers.routing); every other
    socket is the console's, checked for its Origin and signed in by cookie."""
    app = browser_cdp_sockets if scope["path"].startswith(BROWSER_CDP_PREFIX) else console_sockets
    await app(scope, receive, send)


application = ProtocolTypeRouter({"http": http_app, "websocket": websocket_app})
