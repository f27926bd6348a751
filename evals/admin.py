"""Admin views of batches and recorded truths (read mostly; state changes go through evals.services)."""

from django.contrib import admin

from .models import Batch, Truth


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ("public_id", "name", "workspace", "status", "repeats", "concurrency", "created_at", "finished_at")
    list_filter = ("status", "workspace")
    list_select_related = ("workspace",)
    search_fields = ("public_id", "name")
    raw_id_fields = ("created_by",)
    readonly_fields = ("public_id",)


@admin.register(Truth)
class TruthAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ("judgment", "value", "workspace", "recorded_by", "recorded_at")
    list_filter = ("value", "workspace")
    list_select_related = ("workspace", "judgment", "recorded_by")
    raw_id_fields = ("judgment", "recorded_by")
