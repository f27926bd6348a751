"""Root URLs: the operator UI, the API under /api/v1, Browser Use's v4 API under /api/v4, the admin and sign-in (the
demo site has its own server)."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .api import api

urlpatterns = [
    path("", include("runs.urls")),
    path("", include("runs.share_urls")),
    path("", include("judge.urls")),
    path("", include("agent_platform.web_urls")),
    path("", include("evals.urls")),
    path("", include("webhooks.urls")),
    path("", include("schedules.urls")),
    path("", include("runs.recipes.urls")),
    path("", include("browsers.urls")),
    path("api/v1/", api.urls),
    path("", include("browser_use_v4.urls")),
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
]

handler400 = "agent_platform.error_pages.bad_request"
handler403 = "agent_platform.error_pages.permission_denied"
handler404 = "agent_platform.error_pages.page_not_found"
handler500 = "agent_platform.error_pages.server_error"
