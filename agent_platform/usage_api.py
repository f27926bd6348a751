"""The usage API: the workspace's model requests summed by day, model or source, with exact costs."""

from decimal import Decimal
from typing import Any, Literal

from django.db.models import QuerySet
from ninja import Field, Query, Router, Schema

from .api import ERROR_RESPONSES, ApiRequest, Instant
from .models import ModelRequest
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


class UsageReportOut(Schema):
    group_by: str
    totals: UsageTotals = Field(description="Real spend: the requests the Anthropic API answered.")
    groups: list[UsageGroup]
    scripted: ScriptedUsageOut = Field(
        description="The scripted demo model's requests (a key-less `make run`), apart from real spend: billed $0."
    )


def dollars(amount: Decimal) -> str:
    """An exact decimal string without trailing zeros or exponent: 0.1, 10, 0.00012346."""
    return format(amount.normalize(), "f") if amount else "0"


def usage_row(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "requests": row["requests"],
        **{name: row[name] for name in ("input", "output", "cache_read", "cache_write", "total")},
        "cost_usd": dollars(row["cost_usd"]),
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
    return {"group_by": filters.group_by, **real, "scripted": scripted}


def report(requests: QuerySet[ModelRequest], group_by: str) -> dict[str, Any]:
    rows = usage_by(requests, group_by)
    groups = [{"key": str(row[group_by]), **usage_row(row)} for row in rows]
    return {"totals": usage_row(total_of(rows)), "groups": groups}
