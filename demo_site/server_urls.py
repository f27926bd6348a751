"""The demo site's own server: its pages under /demo/ and nothing else of the platform (no admin, no API)."""

from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(url="/demo/", permanent=False)),
    path("demo/", include("demo_site.urls")),
]

# The app's error pages extend its base template, which links into the app: the demo origin has its own.
handler404 = "demo_site.views.not_found"
handler500 = "demo_site.views.server_error"
