"""Admin for sessions, runs and events: runs show their signals, the latest judge verdict, requests and cost. (The
judge's own records, judgments and outcome evaluations, have their admin in judge/admin.py.)"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypedDict

from django.contrib import admin
from django.db.models import F, IntegerField, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from agent_platform.lib.money import format_usd
from judge.models import Judgment, latest_judge_verdict

from .files import StoredFile
from .models import Event, Proxy, Run, Session
from .profiles.models import Profile

# Signals the runtime counts (Run.signals JSON), as integer annotations so the changelist can sort by them.
COUNTED_SIGNALS = ["turns", "budget_notices", "loop_nudges", "stagnation_nudges"]


class CountedSignals(TypedDict):
    """The annotations RunAdmin.get_queryset adds to each run: signal_<name> for each of COUNTED_SIGNALS, and the latest
    judgment's verdict."""

    signal_turns: int | None
    signal_budget_notices: int | None
    signal_loop_nudges: int | None
    signal_stagnation_nudges: int | None
    latest_verdict: str | None


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    # A run of the admin's list, with its counted signals and latest judge verdict.
    AdminRun = WithAnnotations[Run, CountedSignals]


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ["public_id", "workspace", "created_at"]
    list_select_related = ["workspace"]
    search_fields = ["public_id"]
    raw_id_fields = ["workspace", "created_by", "proxy"]


SHOWN_PROXY_FIELDS = ("public_id", "name", "workspace", "scheme", "host", "port", "has_credentials", "created_at", "deleted_at")  # fmt: skip


@admin.register(Proxy)
class ProxyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    """Read only: the sealed URL is never shown (the model keeps it out of every form), and adding or deleting goes
    through the API or the settings page, which seal and forget it."""

    list_display = ["public_id", "name", "workspace", "address", "has_credentials", "created_at", "deleted_at"]
    list_select_related = ["workspace"]
    search_fields = ["public_id", "name", "host"]
    readonly_fields = SHOWN_PROXY_FIELDS
    fields = SHOWN_PROXY_FIELDS

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Proxy | None = None) -> bool:
        return False


@admin.register(StoredFile)
class StoredFileAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    """Files are read-only here: they are what a page or an operator sent, kept as it came."""

    list_display = ["public_id", "name", "source", "size", "workspace", "run", "created_at"]
    list_filter = ["source"]
    list_select_related = ["workspace", "run"]
    search_fields = ["public_id", "name", "sha256"]
    raw_id_fields = ["workspace", "run"]
    readonly_fields = ["name", "size", "content_type", "sha256", "source", "storage_path", "created_at"]
    exclude = ["runs"]


class VerdictTurnFilter(admin.SimpleListFilter):
    title = "verdict turn"
    parameter_name = "verdict_turn"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("none", "none (not needed)"),
            ("cap", "cap (max turns)"),
            ("failures", "failures"),
            ("prose", "prose"),
            ("unrecorded", "not recorded"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        if self.value() == "unrecorded":
            return queryset.exclude(signals__has_key="verdict_turn")
        if self.value():
            return queryset.filter(signals__verdict_turn=self.value())
        return queryset


class VerdictFollowedFilter(admin.SimpleListFilter):
    title = "verdict followed"
    parameter_name = "verdict_followed"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "yes"), ("no", "no"), ("unrecorded", "not recorded")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        if self.value() == "yes":
            return queryset.filter(signals__verdict_followed=True)
        if self.value() == "no":
            return queryset.filter(signals__verdict_followed=False)
        if self.value() == "unrecorded":
            return queryset.exclude(signals__has_key="verdict_followed")
        return queryset


class SignalCountFilter(admin.SimpleListFilter):
    """Runs where a counted signal fired (> 0) or did not."""

    signal = ""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("any", "fired"), ("none", "never")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        fired = Q(**{f"signal_{self.signal}__gt": 0})
        if self.value() == "any":
            return queryset.filter(fired)
        if self.value() == "none":
            return queryset.exclude(fired)
        return queryset


class BudgetNoticesFilter(SignalCountFilter):
    title = "budget notices"
    parameter_name = "budget_notices"
    signal = "budget_notices"


class LoopNudgesFilter(SignalCountFilter):
    title = "loop nudges"
    parameter_name = "loop_nudges"
    signal = "loop_nudges"


class StagnationNudgesFilter(SignalCountFilter):
    title = "stagnation nudges"
    parameter_name = "stagnation_nudges"
    signal = "stagnation_nudges"


class FailuresMaxFilter(admin.SimpleListFilter):
    title = "failure budget reached"
    parameter_name = "failures_max"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "yes"), ("no", "no")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        if self.value() == "yes":
            return queryset.filter(signals__failures_max=True)
        if self.value() == "no":
            return queryset.exclude(signals__failures_max=True)
        return queryset


class TurnsFilter(admin.SimpleListFilter):
    title = "turns"
    parameter_name = "turns"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("all", "all turns used"), ("some", "fewer than max_turns"), ("unrecorded", "not recorded")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        if self.value() == "all":
            return queryset.filter(signal_turns__gte=F("max_turns"))
        if self.value() == "some":
            return queryset.filter(signal_turns__lt=F("max_turns"))
        if self.value() == "unrecorded":
            return queryset.filter(signal_turns__isnull=True)
        return queryset


class RequestsFilter(admin.SimpleListFilter):
    title = "model requests"
    parameter_name = "requests"
    BUCKETS = {"0": (0, 0), "1-10": (1, 10), "11-50": (11, 50), "51+": (51, None)}

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(key, key) for key in self.BUCKETS]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        if self.value() not in self.BUCKETS:
            return queryset
        low, high = self.BUCKETS[str(self.value())]
        queryset = queryset.filter(usage_requests__gte=low)
        return queryset if high is None else queryset.filter(usage_requests__lte=high)


class CostFilter(admin.SimpleListFilter):
    title = "cost (USD)"
    parameter_name = "cost"
    BUCKETS = {
        "zero": ("0", "0"),
        "under-0.10": ("0.00000001", "0.09999999"),
        "0.10-1": ("0.10", "1"),
        "over-1": ("1.00000001", None),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("zero", "$0"), ("under-0.10", "under $0.10"), ("0.10-1", "$0.10 to $1"), ("over-1", "over $1")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        if self.value() not in self.BUCKETS:
            return queryset
        low, high = self.BUCKETS[str(self.value())]
        queryset = queryset.filter(cost_usd__gte=low)
        return queryset if high is None else queryset.filter(cost_usd__lte=high)


class JudgeVerdictFilter(admin.SimpleListFilter):
    title = "judge verdict (latest)"
    parameter_name = "judge_verdict"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*Judgment.Verdict.choices, ("unjudged", "not judged")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[AdminRun]) -> QuerySet[AdminRun]:
        if self.value() == "unjudged":
            return queryset.filter(latest_verdict__isnull=True)
        if self.value() in Judgment.Verdict.values:
            return queryset.filter(latest_verdict=self.value())
        return queryset


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    # One compact column per concern (the outcome, the signals, the judge, the money), so the
    # list fits a laptop screen with every signal shown; each signal keeps its own filter on the right.
    # The run's public id and its four links share the first cell (the id opens the run's admin page, so the list
    # has no other link column), and the date is written short, so the list fits beside its filters.
    list_display = [
        "run_and_links",
        "task_excerpt",
        "ending",
        "turns",
        "signals_summary",
        "judge_verdict",
        "requests",
        "cost",
        "created",
    ]
    list_display_links = None
    list_filter = [
        "status",
        "success",
        "error_code",
        VerdictTurnFilter,
        VerdictFollowedFilter,
        TurnsFilter,
        FailuresMaxFilter,
        LoopNudgesFilter,
        StagnationNudgesFilter,
        BudgetNoticesFilter,
        JudgeVerdictFilter,
        RequestsFilter,
        CostFilter,
        "model",
        "scripted",
        "workspace",
    ]
    list_select_related = ["workspace"]
    list_per_page = 50
    search_fields = ["public_id", "task"]
    raw_id_fields = ["workspace", "session", "created_by"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    readonly_fields = ["links", "public_id"]
    fieldsets = [
        (None, {"fields": ["links", "public_id", "workspace", "session", "created_by", "task", "start_url", "model"]}),
        ("Outcome", {"fields": ["status", "success", "error_code", "error_message", "output", "data", "signals"]}),
        (
            "Usage",
            {
                "fields": [
                    "usage_requests",
                    "usage_input",
                    "usage_output",
                    "usage_cache_read",
                    "usage_cache_write",
                    "cost_usd",
                ]
            },
        ),
        (
            "Settings",
            {
                "classes": ["collapse"],
                "fields": [
                    "scripted",
                    "max_turns",
                    "judge",
                    "judge_context",
                    "allowed_domains",
                    "allow_javascript",
                    "metadata",
                    "idempotency_key",
                ],
            },
        ),
        (
            "Timing",
            {
                "classes": ["collapse"],
                "fields": ["created_at", "started_at", "finished_at", "cancel_requested_at", "heartbeat_at", "worker"],
            },
        ),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AdminRun]:
        counted = {
            f"signal_{name}": Cast(KeyTextTransform(name, "signals"), IntegerField()) for name in COUNTED_SIGNALS
        }
        # The latest verdict is a subquery in the one list query: no query per row however many runs are shown.
        runs: QuerySet[AdminRun] = (
            super().get_queryset(request).annotate(**counted, latest_verdict=latest_judge_verdict())
        )
        return runs

    @admin.display(description="judge", ordering="latest_verdict")
    def judge_verdict(self, obj: AdminRun) -> str:
        return obj.latest_verdict or "-"

    # Runs are written by the runtime; the admin reviews them and never edits one.
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        return False

    @admin.display(description="requests", ordering="usage_requests")
    def requests(self, obj: Run) -> int:
        return obj.usage_requests

    @admin.display(description="cost", ordering="cost_usd")
    def cost(self, obj: Run) -> str:
        # As the billing pages write money ($0.41), not the column's eight stored places.
        return format_usd(obj.cost_usd.quantize(Decimal("0.0001")).normalize() if obj.cost_usd is not None else None)

    @admin.display(description="task", ordering="task")
    def task_excerpt(self, obj: Run) -> str:
        # Task text is user content: format_html escapes it, the full text goes in the title attribute.
        return format_html('<span class="task-excerpt" title="{}">{}</span>', obj.task, Truncator(obj.task).chars(70))

    @admin.display(description="outcome", ordering="status")
    def ending(self, obj: Run) -> str:
        verdict = {True: "success", False: "failure", None: ""}[obj.success]
        parts = [obj.status, verdict, obj.error_code if obj.error_code != obj.status else ""]
        return " · ".join(part for part in parts if part)

    @admin.display(description="signals")
    def signals_summary(self, obj: Run) -> str:
        """The runtime's signals in one short line; only what fired is named, so a calm run reads "calm"."""
        signals = obj.signals if isinstance(obj.signals, dict) else {}
        if not signals:
            return "-"
        fired = []
        turn = signals.get("verdict_turn")
        if turn and turn != "none":
            followed = signals.get("verdict_followed")
            fired.append(
                f"verdict turn: {turn}" + (" (done)" if followed else " (no done)" if followed is False else "")
            )
        for key, label in (("loop_nudges", "loop"), ("stagnation_nudges", "stagnation"), ("budget_notices", "budget")):
            if signals.get(key):
                fired.append(f"{label} ×{signals[key]}")
        if signals.get("failures_max"):
            fired.append("failure budget")
        return ", ".join(fired) or "calm"

    @admin.display(description="verdict turn")
    def verdict_turn(self, obj: Run) -> str:
        return str(obj.signals.get("verdict_turn", "-")) if isinstance(obj.signals, dict) else "-"

    @admin.display(description="verdict followed", boolean=True)
    def verdict_followed(self, obj: Run) -> bool | None:
        value = obj.signals.get("verdict_followed") if isinstance(obj.signals, dict) else None
        return value if isinstance(value, bool) else None

    @admin.display(description="turns", ordering="signal_turns")
    def turns(self, obj: AdminRun) -> str:
        used = obj.signal_turns
        allowed = (
            (obj.signals or {}).get("max_turns", obj.max_turns) if isinstance(obj.signals, dict) else obj.max_turns
        )
        return f"{'-' if used is None else used}/{allowed}"

    @admin.display(description="loop nudges", ordering="signal_loop_nudges")
    def loop_nudges(self, obj: AdminRun) -> int:
        return obj.signal_loop_nudges or 0

    @admin.display(description="stagnation nudges", ordering="signal_stagnation_nudges")
    def stagnation_nudges(self, obj: AdminRun) -> int:
        return obj.signal_stagnation_nudges or 0

    @admin.display(description="budget notices", ordering="signal_budget_notices")
    def budget_notices(self, obj: AdminRun) -> int:
        return obj.signal_budget_notices or 0

    def related_links(self, obj: Run) -> list[tuple[str, str]]:
        """The (url, label) pairs the links column shows."""
        return [
            (reverse("runs:detail", args=[obj.public_id]), "page"),
            (f"{reverse('admin:runs_event_changelist')}?run__id__exact={obj.pk}", "events"),
            (f"{reverse('admin:agent_platform_modelrequest_changelist')}?run__id__exact={obj.pk}", "requests"),
            (f"{reverse('admin:judge_judgment_changelist')}?run__id__exact={obj.pk}", "judgments"),
        ]

    @admin.display(description="run", ordering="public_id")
    def run_and_links(self, obj: Run) -> str:
        change = reverse("admin:runs_run_change", args=[obj.pk])
        links = format_html_join(" · ", '<a href="{}">{}</a>', self.related_links(obj))
        return format_html('<a href="{}">{}</a><div class="run-links">{}</div>', change, obj.public_id, links)

    @admin.display(description="created", ordering="created_at")
    def created(self, obj: Run) -> str:
        return timezone.localtime(obj.created_at).strftime("%Y-%m-%d %H:%M")

    @admin.display(description="links")
    def links(self, obj: Run) -> str:
        if obj.pk is None:
            return "-"
        return format_html_join(" · ", '<a href="{}">{}</a>', self.related_links(obj))


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    """Profiles without their state: the sealed token is neither shown nor editable (docs/profiles.md)."""

    list_display = ["public_id", "name", "workspace", "size_bytes", "last_used_at", "created_at"]
    list_select_related = ["workspace"]
    search_fields = ["public_id", "name"]
    fields = [
        "public_id",
        "workspace",
        "name",
        "cookie_domains",
        "size_bytes",
        "created_at",
        "updated_at",
        "last_used_at",
    ]
    readonly_fields = [
        "public_id",
        "workspace",
        "cookie_domains",
        "size_bytes",
        "created_at",
        "updated_at",
        "last_used_at",
    ]


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):  # type: ignore[type-arg]  # generic in the stubs only
    list_display = ["public_id", "run", "seq", "type", "processed_at"]
    list_filter = ["type"]
    list_select_related = ["run"]
    search_fields = ["public_id", "run__public_id"]
    raw_id_fields = ["run"]
