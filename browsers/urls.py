"""URLs of the Browsers pages (the CDP websocket is routed in browsers.routing)."""

from django.urls import path

from . import views

app_name = "browsers"

urlpatterns = [
    path("browsers/", views.session_list, name="list"),
    path("browsers/<str:session_id>/", views.session_detail, name="detail"),
    path("browsers/<str:session_id>/stop/", views.session_stop, name="stop"),
    path("browsers/<str:session_id>/final.png", views.session_screenshot, name="screenshot"),
    path("browsers/<str:session_id>/trace.zip", views.session_trace, name="trace"),
    path("browsers/<str:session_id>/downloads/<str:name>", views.session_download, name="download"),
]
