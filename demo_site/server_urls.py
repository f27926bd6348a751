"""The demo site's own server: its pages under /demo/ and nothing else of the platform (no admin, no API)."""

from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(url="/demo/", permanent=False)),
    path("demo/", include("demo_site.urls")),
]
