"""Admin for workspaces, members, API keys, prices and model requests."""

from django.contrib import admin

from .models import ApiKey, Membership, ModelRequest, Price, Workspace


class MembershipInline(admin.TabularInline):
    model = Membership
    raw_id_fields = ["user"]
    extra = 0


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role"]
    list_select_related = ["user", "workspace"]
    raw_id_fields = ["user", "workspace"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["display", "name", "workspace", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace"]
    search_fields = ["prefix", "name"]
    # Keys are issued with `createapikey` or the settings page, where the secret is shown once; never edited here.
    readonly_fields = ["workspace", "prefix", "hashed_secret", "created_by", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):
        for key in queryset:
            key.revoke()


@admin.register(Price)
class PriceAdmin(admin.ModelAdmin):
    list_display = [
        "model",
        "speed",
        "input_per_mtok",
        "output_per_mtok",
        "cache_write_5m_per_mtok",
        "cache_write_1h_per_mtok",
        "cache_read_per_mtok",
        "supports_vision",
        "valid_from",
    ]
    list_filter = ["speed", "model"]


@admin.register(ModelRequest)
class ModelRequestAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "workspace",
        "run",
        "source",
        "model",
        "speed",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "unpriced",
    ]
    list_filter = ["source", "speed", "unpriced", "model"]
    list_select_related = ["workspace", "run"]
    raw_id_fields = ["workspace", "run", "price"]
    date_hierarchy = "created_at"
