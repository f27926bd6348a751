"""The usage API: the workspace's model requests summed by day, model or source, with exact costs."""

from datetime import UTC, datetime
from decimal import Decimal
from typing import Literal

from django.db.models import Count, F, Sum
from django.db.models.functions import Coalesce, TruncDay
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from .api import ERROR_RESPONSES
from .models import ModelRequest

router = Router()

TOKEN_FIELDS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_input_tokens",
    "cache_write": "cache_creation_input_tokens",
}


class UsageFilters(Schema):
    group_by: Literal["day", "model", "source"] = "day"
    from_: datetime | None = Field(None, alias="from", description="Requests made at or after this instant.")
    to: datetime | None = Field(None, description="Requests made before this instant.")


class UsageTotals(Schema):
    requests: int
    input: int
    output: int
    cache_read: int
    cache_write: int
    total: int
    cost_usd: str = Field(description="Exact decimal string, in US dollars.")


class UsageGroup(UsageTotals):
    key: str = Field(description="The day (YYYY-MM-DD, UTC), the model or the source.")


class UsageReportOut(Schema):
    group_by: str
    totals: UsageTotals
    groups: list[UsageGroup]


def summed(row: dict) -> dict:
    tokens = {name: int(row[name] or 0) for name in TOKEN_FIELDS}
    cost = Decimal(row["cost_usd"] or 0)
    return {
        "requests": row["requests"],
        **tokens,
        "total": sum(tokens.values()),
        "cost_usd": str(cost.normalize() if cost else Decimal(0)),
    }


@router.get(
    "/usage",
    response={200: UsageReportOut, **ERROR_RESPONSES},
    tags=["usage"],
    summary="Usage and cost of the workspace's model requests",
)
def usage(request: HttpRequest, filters: Query[UsageFilters]):
    requests = ModelRequest.objects.for_workspace(request.workspace)
    if filters.from_:
        requests = requests.filter(created_at__gte=filters.from_)
    if filters.to:
        requests = requests.filter(created_at__lt=filters.to)
    sums = {
        "requests": Count("pk"),
        **{name: Coalesce(Sum(field), 0) for name, field in TOKEN_FIELDS.items()},
        "cost_usd": Sum("cost_usd"),
    }
    key = TruncDay("created_at", tzinfo=UTC) if filters.group_by == "day" else F(filters.group_by)
    rows = requests.annotate(key=key).values("key").annotate(**sums).order_by("key")
    groups = [
        {"key": row["key"].date().isoformat() if filters.group_by == "day" else row["key"], **summed(row)}
        for row in rows
    ]
    return {"group_by": filters.group_by, "totals": summed(requests.aggregate(**sums)), "groups": groups}
