"""Admin for sessions, runs and events."""

from django.contrib import admin

from .models import Event, Run, Session


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["public_id", "workspace", "created_at"]
    list_select_related = ["workspace"]
    search_fields = ["public_id"]
    raw_id_fields = ["workspace", "created_by"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["public_id", "workspace", "status", "success", "error_code", "model", "created_at"]
    list_filter = ["status", "error_code", "model"]
    list_select_related = ["workspace"]
    search_fields = ["public_id", "task"]
    raw_id_fields = ["workspace", "session", "created_by"]


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["public_id", "run", "seq", "type", "processed_at"]
    list_filter = ["type"]
    list_select_related = ["run"]
    search_fields = ["public_id", "run__public_id"]
    raw_id_fields = ["run"]
