"""Admin for judgments, outcomes and their evaluation cycles, linked back to the runs they read. (The run admin's judge
column, filter and link to a run's judgments are the run admin's own, in runs/admin.py.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from runs.models import Run

from .models import Judgment, Outcome, OutcomeEvaluation

# For the type checker only: the admin classes django-stubs makes generic over their model (at runtime they are not
# subscriptable).
if TYPE_CHECKING:
    JudgmentModelAdmin = admin.ModelAdmin[Judgment]
    OutcomeModelAdmin = admin.ModelAdmin[Outcome]
    EvaluationModelAdmin = admin.ModelAdmin[OutcomeEvaluation]
    EvaluationTabularInline = admin.TabularInline[OutcomeEvaluation, Outcome]
else:
    JudgmentModelAdmin = OutcomeModelAdmin = EvaluationModelAdmin = admin.ModelAdmin
    EvaluationTabularInline = admin.TabularInline


def run_admin_link(run: Run) -> str:
    return format_html('<a href="{}">{}</a>', reverse("admin:runs_run_change", args=[run.pk]), run.public_id)


@admin.register(Judgment)
class JudgmentAdmin(JudgmentModelAdmin):
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


class EvaluationInline(EvaluationTabularInline):
    model = OutcomeEvaluation
    extra = 0


@admin.register(Outcome)
class OutcomeAdmin(OutcomeModelAdmin):
    list_display = ["public_id", "run_link", "max_iterations", "created_at"]
    list_select_related = ["run"]
    raw_id_fields = ["run"]
    search_fields = ["public_id", "run__public_id"]
    inlines = [EvaluationInline]

    @admin.display(description="run", ordering="run__public_id")
    def run_link(self, obj: Outcome) -> str:
        return run_admin_link(obj.run)


@admin.register(OutcomeEvaluation)
class OutcomeEvaluationAdmin(EvaluationModelAdmin):
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
