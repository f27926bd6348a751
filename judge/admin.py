"""Admin for judgments, outcomes and their evaluation cycles, linked back to the runs they read."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from .models import Judgment, Outcome, OutcomeEvaluation


def run_admin_link(run) -> str:
    return format_html('<a href="{}">{}</a>', reverse("admin:runs_run_change", args=[run.pk]), run.public_id)


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ["judged_at", "run_link", "verdict", "reason_excerpt", "blocked", "impossible", "model"]
    # The run column is a link to the run already: the judgment's own link is its date, never an empty anchor.
    list_display_links = ["judged_at"]
    list_filter = ["verdict", "blocked", "impossible", "model"]
    list_select_related = ["run"]
    raw_id_fields = ["run", "requested_by"]
    search_fields = ["run__public_id"]
    date_hierarchy = "judged_at"

    @admin.display(description="run", ordering="run__public_id")
    def run_link(self, obj: Judgment) -> str:
        return run_admin_link(obj.run)

    @admin.display(description="reason")
    def reason_excerpt(self, obj: Judgment) -> str:
        # The reason is model output: escaped by format_html, never marked safe.
        return format_html('<span title="{}">{}</span>', obj.reason, Truncator(obj.reason).chars(80))


class EvaluationInline(admin.TabularInline):
    model = OutcomeEvaluation
    extra = 0


@admin.register(Outcome)
class OutcomeAdmin(admin.ModelAdmin):
    list_display = ["public_id", "run_link", "max_iterations", "created_at"]
    list_select_related = ["run"]
    raw_id_fields = ["run"]
    search_fields = ["public_id", "run__public_id"]
    inlines = [EvaluationInline]

    @admin.display(description="run", ordering="run__public_id")
    def run_link(self, obj: Outcome) -> str:
        return run_admin_link(obj.run)


@admin.register(OutcomeEvaluation)
class OutcomeEvaluationAdmin(admin.ModelAdmin):
    list_display = [
        "outcome",
        "iteration",
        "result",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "speed",
        "started_at",
        "finished_at",
    ]
    list_filter = ["result", "speed"]
    list_select_related = ["outcome"]
    raw_id_fields = ["outcome"]
    search_fields = ["outcome__public_id", "outcome__run__public_id"]
