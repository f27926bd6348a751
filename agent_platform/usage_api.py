"""The usage API: the workspace's model requests summed by day, model or source, with exact costs."""

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from django.db.models import QuerySet
from ninja import Field, Query, Router, Schema

from agent_platform.lib.money import exact_usd

from . import meters
from .api import ERROR_RESPONSES, ApiRequest, Instant
from .models import ModelRequest, Workspace
from .reports import total_of, usage_by

router = Router()


class UsageFilters(Schema):
    group_by: Literal["day", "model", "source"] = "day"
    from_: Instant | None = Field(None, alias="from", description="Requests made at or after this instant.")
    to: Instant | None = Field(None, description="Requests made before this instant.")


class UsageTotals(Schema):
    requests: int
    input: int
    output: int
    cache_read: int
    cache_write: int
    total: int
    cost_usd: str = Field(description="Exact decimal string, in US dollars.")


class UsageGroup(UsageTotals):
    key: str = Field(description="The day (YYYY-MM-DD, in the server's time zone), the model or the source.")


class ScriptedUsageOut(Schema):
    totals: UsageTotals
    groups: list[UsageGroup]


class MeteredDay(Schema):
    day: str = Field(description="The day the metered things began (YYYY-MM-DD, in the server's time zone).")
    count: int
    quantity: int
    cost_usd: str = Field(description="Exact decimal string, in US dollars.")


class MeteredOut(Schema):
    name: str = Field(description="browser_minutes: the minutes of the workspace's browser sessions.")
    unit: str = Field(description="What `quantity` counts: minute.")
    counted: str = Field(description="What `count` counts: session.")
    count: int
    quantity: int
    cost_usd: str = Field(description="Exact decimal string, in US dollars: billed beside the model requests.")
    days: list[MeteredDay]


class UsageReportOut(Schema):
    group_by: str
    totals: UsageTotals = Field(description="Real spend: the requests the Anthropic API answered.")
    groups: list[UsageGroup]
    scripted: ScriptedUsageOut = Field(
        description="The scripted demo model's requests (a key-less `make run`), apart from real spend: billed $0."
    )
    metered: list[MeteredOut] = Field(
        description="Usage billed beside the model requests (browser minutes), of things begun in [from, to)."
    )
    total_cost_usd: str = Field(description="The real spend's cost and every meter's, together.")


def usage_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "requests": row["requests"],
        **{name: row[name] for name in ("input", "output", "cache_read", "cache_write", "total")},
        "cost_usd": exact_usd(row["cost_usd"]),
    }


@router.get(
    "/usage",
    response={200: UsageReportOut, **ERROR_RESPONSES},
    tags=["usage"],
    summary="Usage and cost of the workspace's model requests",
)
def usage(request: ApiRequest, filters: Query[UsageFilters]) -> dict[str, Any]:
    requests = ModelRequest.objects.for_workspace(request.workspace)
    if start := filters.from_:
        requests = requests.filter(created_at__gte=start)
    if end := filters.to:
        requests = requests.filter(created_at__lt=end)
    # The same aggregation as the admin's billing views and the UI's usage page; scripted requests on a line apart.
    real, scripted = (report(queryset, filters.group_by) for queryset in (requests.real(), requests.scripted()))
    metered = metered_report(request.workspace, filters.from_, filters.to)
    total = Decimal(real["totals"]["cost_usd"]) + sum((Decimal(meter["cost_usd"]) for meter in metered), Decimal(0))
    return {
        "group_by": filters.group_by,
        **real,
        "scripted": scripted,
        "metered": metered,
        "total_cost_usd": exact_usd(total),
    }


def metered_report(workspace: Workspace, start: datetime | None, end: datetime | None) -> list[dict[str, Any]]:
    readings = meters.read(workspace, start, end)
    days = meters.grouped(readings, "day")
    return [
        {
            **{name: meter[name] for name in ("name", "unit", "counted", "count", "quantity")},
            "cost_usd": exact_usd(meter["cost_usd"]),
            "days": [
                {
                    "day": str(row["day"]),
                    "count": row["count"],
                    "quantity": row["quantity"],
                    "cost_usd": exact_usd(row["cost_usd"]),
                }
                for row in days
                if row["meter"] == meter["name"]
            ],
        }
        for meter in meters.totals(readings)
    ]


def report(requests: QuerySet[ModelRequest], group_by: str) -> dict[str, Any]:
    rows = usage_by(requests, group_by)
    groups = [{"key": str(row[group_by]), **usage_row(row)} for row in rows]
    return {"totals": usage_row(total_of(rows)), "groups": groups}
