"""Admin for judgments, outcomes and their evaluation cycles."""

from django.contrib import admin

from .models import Judgment, Outcome, OutcomeEvaluation


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ["run", "verdict", "blocked", "impossible", "judged_at"]
    list_filter = ["verdict", "blocked", "impossible"]
    list_select_related = ["run"]
    raw_id_fields = ["run", "requested_by"]
    search_fields = ["run__public_id"]


class EvaluationInline(admin.TabularInline):
    model = OutcomeEvaluation
    extra = 0


@admin.register(Outcome)
class OutcomeAdmin(admin.ModelAdmin):
    list_display = ["public_id", "run", "max_iterations", "created_at"]
    list_select_related = ["run"]
    raw_id_fields = ["run"]
    search_fields = ["public_id", "run__public_id"]
    inlines = [EvaluationInline]


@admin.register(OutcomeEvaluation)
class OutcomeEvaluationAdmin(admin.ModelAdmin):
    list_display = ["outcome", "iteration", "result", "started_at", "finished_at"]
    list_filter = ["result"]
    list_select_related = ["outcome"]
    raw_id_fields = ["outcome"]
