"""URLs of the webhook settings page."""

from django.urls import path

from . import views

app_name = "webhooks"

urlpatterns = [
    path("settings/webhooks/", views.webhook_settings, name="settings"),
    path("settings/webhooks/endpoints/", views.endpoint_create, name="endpoint_create"),
    path("settings/webhooks/endpoints/<str:endpoint_id>/delete/", views.endpoint_delete, name="endpoint_delete"),
    path("settings/webhooks/endpoints/<str:endpoint_id>/rotate/", views.endpoint_rotate, name="endpoint_rotate"),
    path("settings/webhooks/deliveries/<str:delivery_id>/resend/", views.delivery_resend, name="resend"),
]
