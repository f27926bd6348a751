"""/api/v4: Browser Use's missing features named first, then the v4 API, then a JSON 404 for any other path."""

from django.urls import path, re_path

from .files import receive_upload, send_download
from .routes import api
from .unsupported import PATTERN, missing_feature, not_found

urlpatterns = [
    re_path(PATTERN, missing_feature),
    # Where the SDK's upload() PUTs a file's bytes, and a listing's download links: signed URLs, no API key.
    path("api/v4/uploads/<str:token>", receive_upload, name="browser_use_v4_upload"),
    path("api/v4/downloads/<str:token>", send_download, name="browser_use_v4_download"),
    path("api/v4/", api.urls),
    re_path(r"^api/v4/(?P<rest>.*)$", not_found),
]
