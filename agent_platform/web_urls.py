"""Operator pages of the platform itself: workspace settings (members, API keys) and usage; and /metrics."""

from django.urls import path

from . import views

app_name = "platform"

urlpatterns = [
    path("workspaces/<slug:slug>/choose/", views.choose, name="choose_workspace"),
    path("settings/", views.workspace_settings, name="settings"),
    path("settings/keys/", views.api_key_create, name="key_create"),
    path("settings/keys/<str:prefix>/revoke/", views.api_key_revoke, name="key_revoke"),
    path("usage/", views.usage, name="usage"),
    path("metrics", views.metrics_scrape, name="metrics"),
]
