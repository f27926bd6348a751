"""Shared sessions: the pages a share link opens, signed out."""

from django.urls import path

from . import share_views

app_name = "share"

urlpatterns = [
    path("share/<str:token>/", share_views.shared_session, name="session"),
    path(
        "share/<str:token>/runs/<str:run_id>/screenshots/<str:name>", share_views.shared_screenshot, name="screenshot"
    ),
]
