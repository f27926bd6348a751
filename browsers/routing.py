"""The CDP websocket's route. Not behind the Origin check of the console's sockets: a CDP client is a program, not a
page, it sends no Origin, and it is authenticated by the session's token in the path, never by a cookie."""

from django.urls import URLPattern, path

from .consumers import BrowserCdpConsumer, BrowserLiveConsumer

CDP_PREFIX = "/browsers/"

websocket_urlpatterns: list[URLPattern] = [
    path("browsers/<str:session_id>/cdp/<str:token>", BrowserCdpConsumer.as_asgi()),
]

# The console's socket of a session's page (its live picture and take control): signed in by cookie, Origin checked,
# routed with the console's sockets (agent_platform.asgi).
console_urlpatterns: list[URLPattern] = [
    path("ws/browsers/<str:session_id>/live/", BrowserLiveConsumer.as_asgi()),
]
