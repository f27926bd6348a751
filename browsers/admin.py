"""Browser sessions in the admin: who started them, how long they lived, their minutes and cost."""

from django.contrib import admin

from agent_platform.lib.money import format_usd

from .models import BrowserSession


@admin.register(BrowserSession)
class BrowserSessionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ("public_id", "workspace", "status", "stop_reason", "created_by", "created_at", "minutes", "cost")
    list_filter = ("status", "stop_reason")
    list_select_related = ("workspace", "created_by")
    raw_id_fields = ("workspace", "created_by", "api_key", "profile", "proxy")
    readonly_fields = (
        "uuid",
        "relay_address",
        "download_dir",
        "worker",
        "started_at",
        "ended_at",
        "heartbeat_at",
        "minute_price_usd",
    )
    exclude = ("token_salt",)

    @admin.display(description="browser minutes")
    def minutes(self, session: BrowserSession) -> int:
        return session.browser_minutes()

    @admin.display(description="cost (USD)")
    def cost(self, session: BrowserSession) -> str:
        return format_usd(session.cost_usd())
