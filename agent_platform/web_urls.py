"""Operator pages of the platform itself: workspace settings (members, API keys) and usage."""

from django.urls import path

from . import views

app_name = "platform"

urlpatterns = [
    path("workspaces/<slug:slug>/choose/", views.choose, name="choose_workspace"),
]
