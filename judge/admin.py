"""Admin for judgments, outcomes and their evaluation cycles, linked back to the runs they read; and the run admin
extended with the latest judge verdict (a column, a filter, a link to the run's judgments), which runs' own admin
cannot show since runs never imports judge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from runs.admin import BudgetNoticesFilter, CountedSignals, RunAdmin
from runs.judging_hooks import latest_judge_verdict
from runs.models import Run

from .models import Judgment, Outcome, OutcomeEvaluation


class JudgedRunAnnotations(CountedSignals):
    """What JudgedRunAdmin.get_queryset adds to the run admin's annotations."""

    latest_verdict: str | None


# For the type checker only: a run of the judged list, and the admin classes django-stubs makes generic over their
# model (at runtime they are not subscriptable).
if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    JudgedRun = WithAnnotations[Run, JudgedRunAnnotations]
    JudgmentModelAdmin = admin.ModelAdmin[Judgment]
    OutcomeModelAdmin = admin.ModelAdmin[Outcome]
    EvaluationModelAdmin = admin.ModelAdmin[OutcomeEvaluation]
    EvaluationTabularInline = admin.TabularInline[OutcomeEvaluation, Outcome]
else:
    JudgmentModelAdmin = OutcomeModelAdmin = EvaluationModelAdmin = admin.ModelAdmin
    EvaluationTabularInline = admin.TabularInline


def run_admin_link(run: Run) -> str:
    return format_html('<a href="{}">{}</a>', reverse("admin:runs_run_change", args=[run.pk]), run.public_id)


class JudgeVerdictFilter(admin.SimpleListFilter):
    title = "judge verdict (latest)"
    parameter_name = "judge_verdict"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [*Judgment.Verdict.choices, ("unjudged", "not judged")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[JudgedRun]) -> QuerySet[JudgedRun]:
        if self.value() == "unjudged":
            return queryset.filter(latest_verdict__isnull=True)
        if self.value() in Judgment.Verdict.values:
            return queryset.filter(latest_verdict=self.value())
        return queryset


def placed_after(items: list[Any], anchor: Any, item: Any) -> list[Any]:
    """`items` with `item` inserted right after `anchor`."""
    index = items.index(anchor) + 1
    return [*items[:index], item, *items[index:]]


class JudgedRunAdmin(RunAdmin):
    """The run admin with the judge's column (beside the signals), filter (after the signals' filters) and link."""

    list_display = placed_after(RunAdmin.list_display, "signals_summary", "judge_verdict")
    list_filter = placed_after(RunAdmin.list_filter, BudgetNoticesFilter, JudgeVerdictFilter)

    def get_queryset(self, request: HttpRequest) -> QuerySet[JudgedRun]:
        # The latest verdict is a subquery in the one list query: no query per row however many runs are shown.
        return super().get_queryset(request).annotate(latest_verdict=latest_judge_verdict())

    @admin.display(description="judge", ordering="latest_verdict")
    def judge_verdict(self, obj: JudgedRun) -> str:
        return obj.latest_verdict or "-"

    def related_links(self, obj: Run) -> list[tuple[str, str]]:
        judgments = f"{reverse('admin:judge_judgment_changelist')}?run__id__exact={obj.pk}"
        return [*super().related_links(obj), (judgments, "judgments")]


admin.site.unregister(Run)
admin.site.register(Run, JudgedRunAdmin)


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
