"""Websocket routes: one live feed per run, and one for a workspace's runs list."""

from django.urls import path

from .consumers import RunConsumer, RunsListConsumer

websocket_urlpatterns: list = [
    path("ws/runs/", RunsListConsumer.as_asgi()),
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
]
