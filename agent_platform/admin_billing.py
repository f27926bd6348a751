"""The admin's billing view: usage and cost per workspace per month and per day, split by model or source, and CSV.

It reads the daily rollup (UsageDay), never the requests themselves: at ten million requests a scan of them takes
seconds, while the rollup holds a row per workspace, day, model, source and speed."""

import csv
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TypedDict

from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from . import meters
from .lib.money import exact_usd
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

    def span(self) -> tuple[datetime | None, datetime | None]:
        """The instants of the month chosen (none: all time), for the meters."""
        if self.month is None:
            return None, None
        return meters.day_start(self.month.replace(day=1)), meters.day_start(next_month(self.month))

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
    # browser minutes and any other meter (agent_platform.meters), per workspace per month and per day, and the cost
    # of everything together: real spend and the meters
    metered_totals: list[dict[str, Any]]
    metered_by_month: list[dict[str, Any]]
    metered_by_day: list[dict[str, Any]]
    total_cost_usd: Decimal


def billing_report(
    queryset: Ledger, split: str, *, days: bool = True, filters: BillingFilters | None = None
) -> BillingReport:
    """The report of the rollup's rows (or of the requests themselves: the benchmark's reference); without `days`, no
    per-day rows (the page of every month shows months). The meters are read for `filters` (default: everything)."""
    extra = [split] if split else []
    real, scripted = queryset.filter(scripted=False), queryset.filter(scripted=True)
    workspace = filters.workspace if filters is not None else None
    start, end = filters.span() if filters is not None else (None, None)
    readings = meters.read(workspace, start, end)
    metered_totals = meters.totals(readings)
    totals = usage_totals(real)
    used = {row.workspace_id for _meter, rows in readings for row in rows}
    slugs = dict(Workspace.objects.filter(pk__in=used).values_list("pk", "slug")) if used else {}

    def named(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**row, "workspace_slug": slugs.get(row["workspace_id"], "")} for row in rows]

    return BillingReport(
        metered_totals=metered_totals,
        metered_by_month=named(meters.grouped(readings, "month")),
        metered_by_day=named(meters.grouped(readings, "day")) if days else [],
        total_cost_usd=totals["cost_usd"] + meters.total_cost(metered_totals),
        totals=totals,
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
    # A meter's rows (browser minutes) follow, with the meter's name and quantity in the last two columns: the
    # cost_usd of every day row adds up to everything billed.
    writer.writerow(["period", "date", "workspace", *split_columns, *METRICS, "scripted", "meter", "quantity"])
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
                    *(exact_usd(row[metric]) if metric == "cost_usd" else row[metric] for metric in METRICS),
                    "true" if scripted else "false",
                    "",
                    "",
                ]
            )
    for period, key, fmt in (("month", "metered_by_month", "%Y-%m"), ("day", "metered_by_day", "%Y-%m-%d")):
        metered: list[dict[str, Any]] = report[key]  # type: ignore[literal-required]
        for row in metered:
            costs = [exact_usd(row["cost_usd"]) if metric == "cost_usd" else "" for metric in METRICS]
            writer.writerow(
                [
                    period,
                    row[period].strftime(fmt),
                    csv_safe(row["workspace_slug"]),
                    *("" for _ in split_columns),
                    *costs,
                    "false",
                    row["meter"],
                    row["quantity"],
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
    report = billing_report(filters.apply(UsageDay.objects.all()), filters.split, days=days, filters=filters)
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
        "metered_sections": [
            ("Metered by month", "month", report["metered_by_month"]),
            *([("Metered by day", "day", report["metered_by_day"])] if days else []),
        ],
        "filters": filters,
        "workspaces": workspaces,
        "months": list(months),
        "splits": SPLITS,
        "csv_query": query.urlencode(),
    }
    return TemplateResponse(request, "admin/agent_platform/billing.html", context)
