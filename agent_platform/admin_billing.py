"""The admin's billing view: usage and cost per workspace per month and per day, split by model or source, and CSV.

It reads the daily rollup (UsageDay), never the requests themselves: at ten million requests a scan of them takes
seconds, while the rollup holds a row per workspace, day, model, source and speed."""

import csv
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, TypedDict

from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from .models import ModelRequest, UsageDay, Workspace
from .reports import Ledger, usage_by, usage_totals

SPLITS = {"": "nothing", "model": "model", "source": "source"}
METRICS = ["requests", "input", "output", "cache_read", "cache_write", "total", "cost_usd", "unpriced"]


@dataclass(frozen=True)
class BillingFilters:
    workspace: Workspace | None
    month: date | None
    split: str

    def apply(self, queryset: QuerySet[UsageDay]) -> QuerySet[UsageDay]:
        if self.workspace is not None:
            queryset = queryset.filter(workspace=self.workspace)
        if self.month is not None:
            # Months are calendar months of TIME_ZONE, whose dates the rollup's days are.
            queryset = queryset.filter(day__gte=self.month.replace(day=1), day__lt=next_month(self.month))
        return queryset

    @property
    def month_param(self) -> str:
        return f"{self.month:%Y-%m}" if self.month else ""


def next_month(month: date) -> date:
    return date(month.year + 1, 1, 1) if month.month == 12 else date(month.year, month.month + 1, 1)


def parse_filters(request: HttpRequest, workspaces: list[Workspace]) -> BillingFilters:
    """Read ?workspace=<id>&month=YYYY-MM&split=model|source; a bad value means "no filter", never an error page."""
    chosen = request.GET.get("workspace", "")
    workspace = next((ws for ws in workspaces if str(ws.pk) == chosen), None)
    month_text = request.GET.get("month")
    month: date | None
    if month_text is None:
        month = timezone.localdate().replace(day=1)
    else:
        try:
            # Only the calendar month is kept, so the parsed value needs no time zone.
            month = datetime.strptime(month_text, "%Y-%m").date() if month_text else None  # noqa: DTZ007
        except ValueError:
            month = None
    split = request.GET.get("split", "")
    return BillingFilters(workspace, month, split if split in SPLITS else "")


class BillingReport(TypedDict):
    """The numbers the view shows and the CSV exports: totals, per workspace per month, per workspace per day, of
    real spend; and the same of the scripted demo model's requests (billed $0), never mixed into real spend."""

    totals: dict[str, Any]
    by_month: list[dict[str, Any]]
    by_day: list[dict[str, Any]]
    scripted_totals: dict[str, Any]
    scripted_by_month: list[dict[str, Any]]
    scripted_by_day: list[dict[str, Any]]


def billing_report(queryset: Ledger, split: str, *, days: bool = True) -> BillingReport:
    """The report of the rollup's rows (or of the requests themselves: the benchmark's reference); without `days`, no
    per-day rows (the page of every month shows months)."""
    extra = [split] if split else []
    real, scripted = queryset.filter(scripted=False), queryset.filter(scripted=True)
    return BillingReport(
        totals=usage_totals(real),
        by_month=usage_by(real, ["workspace", "month", *extra], newest_first=True),
        by_day=usage_by(real, ["workspace", "day", *extra], newest_first=True) if days else [],
        scripted_totals=usage_totals(scripted),
        scripted_by_month=usage_by(scripted, ["workspace", "month", *extra], newest_first=True),
        scripted_by_day=usage_by(scripted, ["workspace", "day", *extra], newest_first=True) if days else [],
    )


def csv_safe(value: object) -> str:
    # Model names come from API answers and workspace names from users: never let a spreadsheet run them.
    text = str(value)
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def billing_csv(report: BillingReport, filters: BillingFilters) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"billing-{filters.month_param or 'all'}{f'-{filters.workspace.slug}' if filters.workspace else ''}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    split_columns = [filters.split] if filters.split else []
    # The scripted demo model's rows follow the real ones, marked in a last column so no sum mixes them.
    writer.writerow(["period", "date", "workspace", *split_columns, *METRICS, "scripted"])
    sections = (
        ("month", "by_month", "%Y-%m", False),
        ("day", "by_day", "%Y-%m-%d", False),
        ("month", "scripted_by_month", "%Y-%m", True),
        ("day", "scripted_by_day", "%Y-%m-%d", True),
    )
    for period, key, fmt, scripted in sections:
        rows: list[dict[str, Any]] = report[key]  # type: ignore[literal-required]
        for row in rows:
            writer.writerow(
                [
                    period,
                    row[period].strftime(fmt),
                    csv_safe(row["workspace_slug"]),
                    *(csv_safe(row[column]) for column in split_columns),
                    *(row[metric] for metric in METRICS),
                    "true" if scripted else "false",
                ]
            )
    return response


def billing_view(request: HttpRequest, admin_site: AdminSite) -> HttpResponse:
    """Staff only (the admin wraps it in admin_site.admin_view); also needs the permission to view model requests."""
    if not request.user.has_perm("agent_platform.view_modelrequest"):
        raise PermissionDenied
    workspaces = list(Workspace.objects.order_by("name"))
    filters = parse_filters(request, workspaces)
    csv_export = request.GET.get("format") == "csv"
    # Every day of every month is thousands of rows, too many to read on a page (and to render in 300 ms): the page
    # shows days one month at a time, the CSV every day asked for.
    days = csv_export or filters.month is not None
    report = billing_report(filters.apply(UsageDay.objects.all()), filters.split, days=days)
    if csv_export:
        return billing_csv(report, filters)
    months = UsageDay.objects.dates("day", "month", order="DESC")
    query = request.GET.copy()
    query["format"] = "csv"
    query.setdefault("month", filters.month_param)
    context = {
        **admin_site.each_context(request),
        "title": "Billing",
        "opts": ModelRequest._meta,
        "report": report,
        "sections": [
            ("By month", "month", report["by_month"]),
            *([("By day", "day", report["by_day"])] if days else []),
        ],
        # Shown only when the scripted demo model answered any request of the filter: apart from real spend.
        "scripted_sections": [
            ("Scripted by month", "month", report["scripted_by_month"]),
            *([("Scripted by day", "day", report["scripted_by_day"])] if days else []),
        ]
        if report["scripted_totals"]["requests"]
        else [],
        "filters": filters,
        "workspaces": workspaces,
        "months": list(months),
        "splits": SPLITS,
        "csv_query": query.urlencode(),
    }
    return TemplateResponse(request, "admin/agent_platform/billing.html", context)
