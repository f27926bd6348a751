"""The ASGI entry point: Django views and the API over HTTP, Channels consumers over websockets."""

import os

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
websocket_urlpatterns = import_string("runs.routing.websocket_urlpatterns")

# Static files come from the app itself unless a front proxy serves them; screenshots are never public files:
# they go through runs:screenshot, which checks the viewer's workspace.
http_app = ASGIStaticFilesHandler(django_asgi_app) if settings.SERVE_FILES else django_asgi_app

application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
