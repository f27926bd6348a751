"""Admin views of webhook endpoints and deliveries; the signing secrets are never shown."""

from django.contrib import admin

from .models import Delivery, Endpoint


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ("public_id", "url", "workspace", "active", "created_at")
    list_filter = ("active", "workspace")
    list_select_related = ("workspace",)
    exclude = ("secret", "retiring_secret")
    raw_id_fields = ("created_by",)


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ("public_id", "event_type", "endpoint", "status", "attempts", "response_code", "created_at")
    list_filter = ("status", "event_type")
    list_select_related = ("endpoint",)
    raw_id_fields = ("endpoint", "resend_of")
