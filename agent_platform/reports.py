"""Usage and cost totals, overall or grouped by day, month, model, source, speed or workspace: of ModelRequest
querysets (one row a request), or of UsageDay querysets (the same, summed a day at a time: the admin's billing view
reads these, so it never scans every request)."""

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import BigIntegerField, Count, F, Q, QuerySet, Sum, Value
from django.db.models.functions import Cast, Coalesce, Round, TruncDate, TruncDay, TruncMonth
from django.utils import timezone

from .models import COST_UNITS_PER_DOLLAR, ModelRequest, UsageDay

Ledger = QuerySet[ModelRequest] | QuerySet[UsageDay]

TOKEN_FIELDS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_input_tokens",
    "cache_write": "cache_creation_input_tokens",
}

# What each group key selects (a field name, or an expression under a new name); "workspace" also brings the workspace's slug and name so no row needs another query.
GROUPS: dict[str, dict[str, str | F | TruncDay | TruncMonth]] = {
    "day": {"day": TruncDay("created_at")},
    "month": {"month": TruncMonth("created_at")},
    "model": {"model": "model"},
    "source": {"source": "source"},
    "speed": {"speed": "speed"},
    "workspace": {
        "workspace_id": "workspace_id",
        "workspace_slug": F("workspace__slug"),
        "workspace_name": F("workspace__name"),
    },
}
# A UsageDay row is a day already: its day is a field, its month that field's.
DAY_GROUPS: dict[str, dict[str, str | F | TruncDay | TruncMonth]] = {
    **GROUPS,
    "day": {"day": "day"},
    "month": {"month": TruncMonth("day")},
}
GROUP_ORDER = {"workspace": ["workspace_name", "workspace_id"]}
# A UsageDay column, and the name of the same sum in a report's row.
DAY_COLUMNS = {
    "request_count": "requests",
    **{column: name for name, column in TOKEN_FIELDS.items()},
    "cost_usd_units": "cost_units",
    "unpriced_count": "unpriced",
}

COST_QUANTUM = Decimal("0.00000001")


def _aggregates(queryset: Ledger) -> dict[str, Any]:
    if queryset.model is UsageDay:
        return {name: Coalesce(Sum(column), 0) for column, name in DAY_COLUMNS.items()}
    # Costs are summed as integer units of 10^-8 dollars (the stored precision): exact on PostgreSQL and on SQLite,
    # where a decimal column is a float and a float sum of many rows would drift in the last digits.
    cost_units = Cast(Round(F("cost_usd") * Value(COST_UNITS_PER_DOLLAR)), BigIntegerField())
    return {
        "requests": Count("pk"),
        **{name: Coalesce(Sum(field), 0) for name, field in TOKEN_FIELDS.items()},
        "cost_units": Coalesce(Sum(cost_units), 0),
        "unpriced": Count("pk", filter=Q(unpriced=True)),
    }


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    for name in (*TOKEN_FIELDS, "requests", "unpriced"):
        row[name] = int(row[name])
    row["total"] = sum(row[name] for name in TOKEN_FIELDS)
    row["cost_usd"] = (Decimal(int(row.pop("cost_units"))) / COST_UNITS_PER_DOLLAR).quantize(COST_QUANTUM)
    return row


def usage_totals(queryset: Ledger) -> dict[str, Any]:
    """One query: {requests, input, output, cache_read, cache_write, total, cost_usd (Decimal), unpriced}."""
    return _finish(queryset.aggregate(**_aggregates(queryset)))


def total_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The totals of `usage_totals` added up from `usage_by` rows: exact, and no second pass over the requests."""
    counted = ("requests", "unpriced", *TOKEN_FIELDS, "total")
    totals = {name: sum(row[name] for row in rows) for name in counted}
    totals["cost_usd"] = sum((row["cost_usd"] for row in rows), Decimal(0)).quantize(COST_QUANTUM)
    return totals


def usage_by(queryset: Ledger, group_by: str | Iterable[str], *, newest_first: bool = False) -> list[dict[str, Any]]:
    """One GROUP BY query: a row per group with the group's keys and the totals of `usage_totals`.

    `group_by` is one of day, month, model, source, speed, workspace, or several of them, e.g.
    ("workspace", "month", "model"). Day and month are dates in the current time zone; a workspace group
    carries workspace_id, workspace_slug and workspace_name. Rows are ordered by the keys in the order given,
    time keys oldest first unless `newest_first`.
    """
    keys = [group_by] if isinstance(group_by, str) else list(group_by)
    groups = DAY_GROUPS if queryset.model is UsageDay else GROUPS
    unknown = [key for key in keys if key not in groups]
    if unknown or not keys:
        raise ValueError(f"usage_by groups by {', '.join(GROUPS)}; not {unknown or 'nothing'}")
    selected: dict[str, str | F | TruncDay | TruncMonth] = {}
    ordering: list[str] = []
    for key in keys:
        selected.update(groups[key])
        for name in GROUP_ORDER.get(key, [key]):
            descending = newest_first and key in ("day", "month")
            ordering.append(f"-{name}" if descending else name)
    # order_by() first: an ordering left on the queryset (the admin's, the model's) would split the groups.
    fields = [value for value in selected.values() if isinstance(value, str)]
    expressions = {name: value for name, value in selected.items() if not isinstance(value, str)}
    rows = queryset.order_by().values(*fields, **expressions).annotate(**_aggregates(queryset)).order_by(*ordering)
    result = []
    for row in rows:
        for key in ("day", "month"):
            if key in row and row[key] is not None and hasattr(row[key], "date"):
                row[key] = row[key].date()
        result.append(_finish(row))
    return result


def rebuild_usage_days(request_model: Any = ModelRequest, day_model: Any = UsageDay) -> int:
    """Write the daily rollup again from the requests, in one transaction (a migration passes its historical models);
    the number of day rows written. One GROUP BY over the requests: a minute or so at ten million of them, during
    which PostgreSQL holds new requests back (a SHARE lock), so none is counted twice or missed."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(f"LOCK TABLE {connection.ops.quote_name(request_model._meta.db_table)} IN SHARE MODE")
        days = _summed_days(request_model, day_model)
        day_model.objects.all().delete()
        day_model.objects.bulk_create(days, batch_size=1000)
    return len(days)


def _summed_days(request_model: Any, day_model: Any) -> list[Any]:
    requests = request_model.objects.order_by()
    keys = ("workspace_id", "model", "source", "speed", "scripted")
    day = TruncDate("created_at", tzinfo=timezone.get_default_timezone())
    rows = requests.values(*keys, day=day).annotate(**_aggregates(requests))
    return [
        day_model(day=row["day"], **{key: row[key] for key in keys}, **{c: row[n] for c, n in DAY_COLUMNS.items()})
        for row in rows.iterator()
    ]
