"""/api/v4: Browser Use's missing features named first, then the v4 API, then a JSON 404 for any other path."""

from django.urls import path, re_path

from .api import api
from .unsupported import PATTERN, missing_feature, not_found

urlpatterns = [
    re_path(PATTERN, missing_feature),
    path("api/v4/", api.urls),
    re_path(r"^api/v4/(?P<rest>.*)$", not_found),
]
