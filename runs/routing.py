"""Websocket routes: one live feed per run, and one for a workspace's runs list."""

websocket_urlpatterns: list = []
