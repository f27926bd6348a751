"""Admin for workspaces, members, API keys, prices, and model requests with their totals and the billing view."""

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import SimpleTemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from agent_platform.lib.money import format_usd

from .admin_billing import billing_view
from .models import ApiKey, Membership, ModelRequest, Price, Workspace
from .reports import usage_totals


# ModelAdmin and TabularInline are generic in django-stubs but not at runtime (subscripting them there needs
# django_stubs_ext, which is no dependency of the app), so the classes below subclass them bare.
class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]  # generic in the stubs only
    model = Membership
    raw_id_fields = ["user"]
    extra = 0


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = [
        "name", "slug", "default_max_cost_usd", "monthly_cost_cap_usd", "extraction_model",
        "max_concurrent_runs", "max_queued_runs", "retention_days", "created_at",
    ]  # fmt: skip
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role"]
    list_select_related = ["user", "workspace"]
    raw_id_fields = ["user", "workspace"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ["display", "name", "workspace", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_filter = ["workspace"]
    list_select_related = ["workspace"]
    search_fields = ["prefix", "name"]
    # Keys are issued with `createapikey` or the settings page, where the secret is shown once; never edited here.
    readonly_fields = ["workspace", "prefix", "hashed_secret", "created_by", "created_at", "last_used_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for key in queryset:
            key.revoke()


# The app list beside every admin page takes a quarter of a laptop's width from the changelists; the index page
# and the breadcrumbs already lead everywhere it does.
admin.site.enable_nav_sidebar = False


@admin.register(Price)
class PriceAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    # What tells two rows of one model apart (valid_from, min_prompt_tokens: Haiku 5.5's long-prompt tier) comes
    # first; the three cache prices share a column so the table fits a laptop's width beside the filters.
    list_display = [
        "model",
        "speed",
        "valid_from",
        "min_prompt_tokens",
        "input_price",
        "output_price",
        "cache_prices",
        "supports_vision",
    ]
    list_filter = ["speed", "model"]
    search_fields = ["model"]
    date_hierarchy = "valid_from"

    @admin.display(description="input $/MTok", ordering="input_per_mtok")
    def input_price(self, obj: Price) -> str:
        return format_usd(obj.input_per_mtok)

    @admin.display(description="output $/MTok", ordering="output_per_mtok")
    def output_price(self, obj: Price) -> str:
        return format_usd(obj.output_per_mtok)

    @admin.display(description="cache $/MTok: write 5m · 1h · read")
    def cache_prices(self, obj: Price) -> str:
        written = (obj.cache_write_5m_per_mtok, obj.cache_write_1h_per_mtok, obj.cache_read_per_mtok)
        return " · ".join(format_usd(value) for value in written)

    def get_readonly_fields(self, request: HttpRequest, obj: Price | None = None) -> list[str]:
        # A price some request was billed at is that request's history: change prices by adding a row with a later
        # valid_from, which applies from that moment on only.
        if obj is not None and ModelRequest.objects.filter(price=obj).exists():
            return [field.name for field in self.model._meta.fields]
        return []


@admin.register(ModelRequest)
class ModelRequestAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = [
        "created_at",
        "workspace",
        "run_link",
        "source",
        "model",
        "speed",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cost",
        "priced",
    ]
    list_filter = ["workspace", "model", "source", "speed", "unpriced", "scripted"]
    list_select_related = ["workspace", "run"]
    raw_id_fields = ["workspace", "run", "price"]
    search_fields = ["run__public_id", "model"]
    date_hierarchy = "created_at"
    show_full_result_count = False

    # Requests are billing history written by the runtime; the admin reviews them and never edits them.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ModelRequest | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ModelRequest | None = None) -> bool:
        return False  # what was paid stays billed (and the daily rollup, UsageDay, exact)

    @admin.display(description="run", ordering="run__public_id")
    def run_link(self, obj: ModelRequest) -> str:
        if obj.run is None:
            return "-"
        url = reverse("admin:runs_run_change", args=[obj.run_id])
        return format_html('<a href="{}">{}</a>', url, obj.run.public_id)

    @admin.display(description="cost", ordering="cost_usd")
    def cost(self, obj: ModelRequest) -> str:
        # As money is written ($0.215), not the column's eight stored places: the list then fits beside its filters.
        return format_usd(obj.cost_usd.normalize() if obj.cost_usd is not None else None)

    @admin.display(description="price", ordering="unpriced")
    def priced(self, obj: ModelRequest) -> str:
        if obj.scripted:
            return format_html(
                '<span title="{}">scripted</span>',
                "Answered by the scripted demo model: billed at zero, not real spend.",
            )
        if obj.unpriced:
            return format_html(
                '<strong style="color:#ba2121" title="{}">UNPRICED</strong>',
                "No price was in force for this model and speed: billed at zero. Add a Price row.",
            )
        return "yes"

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        context = response.context_data if isinstance(response, SimpleTemplateResponse) else None
        # One aggregate over the filtered queryset (not the page): the totals follow every filter and search.
        if context is not None and "cl" in context:
            # Real spend; the scripted demo model's requests (billed $0) are totalled on a line of their own.
            context["usage_totals"] = usage_totals(context["cl"].queryset.filter(scripted=False))
            context["scripted_totals"] = usage_totals(context["cl"].queryset.filter(scripted=True))
            context["billing_url"] = reverse("admin:agent_platform_billing")
        return response

    def billing_view(self, request: HttpRequest) -> HttpResponse:
        return billing_view(request, self.admin_site)

    def get_urls(self) -> list[URLPattern]:
        billing = path("billing/", self.admin_site.admin_view(self.billing_view), name="agent_platform_billing")
        return [billing, *super().get_urls()]
