"""Metered usage beside model requests (browser minutes): an app above registers a meter when it is ready, and the
usage page, the usage API and the admin's billing read every meter through here, never the app itself."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from django.utils import timezone

from .models import Workspace


@dataclass(frozen=True)
class MeterRow:
    """One metered thing (a browser session): its workspace, the day it is billed on (in TIME_ZONE), how much of the
    meter's unit it used and what that cost (exact)."""

    workspace_id: int
    day: date
    quantity: int
    cost_usd: Decimal


# The rows of things begun in [start, end), of one workspace or of all (None).
RowsOf = Callable[[Workspace | None, datetime | None, datetime | None], Iterable[MeterRow]]


@dataclass(frozen=True)
class Meter:
    name: str  # the key in reports and the API: browser_minutes
    label: str  # for people: Browser minutes
    unit: str  # minute
    counted: str  # what each row is: session
    rows: RowsOf


_meters: dict[str, Meter] = {}


def register(meter: Meter) -> None:
    _meters[meter.name] = meter


def meters() -> list[Meter]:
    return list(_meters.values())


def day_start(day: date) -> datetime:
    """The first instant of a calendar day of TIME_ZONE."""
    return timezone.make_aware(datetime.combine(day, time.min))


def _summed(meter: Meter, rows: Iterable[MeterRow]) -> dict[str, Any]:
    listed = list(rows)
    return {
        "name": meter.name,
        "label": meter.label,
        "unit": meter.unit,
        "counted": meter.counted,
        "count": len(listed),
        "quantity": sum(row.quantity for row in listed),
        "cost_usd": sum((row.cost_usd for row in listed), Decimal(0)),
    }


Readings = list[tuple[Meter, list[MeterRow]]]


def read(workspace: Workspace | None, start: datetime | None = None, end: datetime | None = None) -> Readings:
    """Every meter's rows over [start, end), read once (a query a meter): `totals` and `grouped` sum them."""
    return [(meter, list(meter.rows(workspace, start, end))) for meter in meters()]


def totals(readings: Readings) -> list[dict[str, Any]]:
    """Each meter's {name, label, unit, counted, count, quantity, cost_usd}."""
    return [_summed(meter, rows) for meter, rows in readings]


def grouped(readings: Readings, period: str) -> list[dict[str, Any]]:
    """Each meter's totals per workspace per `period` (day or month, a date: the month's first day), newest first;
    each row also carries `meter` (the name) and `workspace_id`."""
    result: list[dict[str, Any]] = []
    for meter, rows in readings:
        groups: dict[tuple[int, date], list[MeterRow]] = {}
        for row in rows:
            key = row.day if period == "day" else row.day.replace(day=1)
            groups.setdefault((row.workspace_id, key), []).append(row)
        for (workspace_id, key), members in groups.items():
            result.append({**_summed(meter, members), "meter": meter.name, "workspace_id": workspace_id, period: key})
    result.sort(key=lambda row: (row["meter"], row["workspace_id"]))
    result.sort(key=lambda row: row[period], reverse=True)
    return result


def total_cost(rows: list[dict[str, Any]]) -> Decimal:
    return sum((row["cost_usd"] for row in rows), Decimal(0))
