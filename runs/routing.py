"""Websocket routes: one live feed per run, its browser's live picture, and one for a workspace's runs list."""

from django.urls import URLPattern, path

from .consumers import LiveViewConsumer, RunConsumer, RunsListConsumer

websocket_urlpatterns: list[URLPattern] = [
    path("ws/runs/", RunsListConsumer.as_asgi()),
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
    path("ws/runs/<str:run_id>/live/", LiveViewConsumer.as_asgi()),
]
