"""Instants as RFC 3339 text in UTC, the way our API envelopes, events and webhooks write them ("…Z")."""

import re
from datetime import UTC, datetime, timedelta
from typing import overload


@overload
def rfc3339(moment: datetime, *, milliseconds: bool = False) -> str: ...
@overload
def rfc3339(moment: None, *, milliseconds: bool = False) -> None: ...
@overload
def rfc3339(moment: datetime | None, *, milliseconds: bool = False) -> str | None: ...
def rfc3339(moment: datetime | None, *, milliseconds: bool = False) -> str | None:
    """`moment` in UTC ending in "Z": with exactly three decimals when `milliseconds`, else with the microseconds
    Python writes (six decimals, or none at a whole second). None stays None.

    A naive datetime is refused: it names no instant (the project keeps USE_TZ on).
    """
    if moment is None:
        return None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{moment!r} is naive: an RFC 3339 timestamp needs an aware datetime")
    utc = moment.astimezone(UTC)
    return utc.isoformat(timespec="milliseconds" if milliseconds else "auto").replace("+00:00", "Z")


# RFC 3339's date-time (section 5.6), which OpenAPI's `format: date-time` names: the offset is required, "T" and "Z"
# may be lower case, a leap second is written as second 60.
RFC3339_DATE_TIME = re.compile(
    r"(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})[Tt]"
    r"(?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})(?:\.(?P<fraction>\d+))?"
    r"(?:(?P<utc>[Zz])|(?P<sign>[+-])(?P<offset_hours>\d{2}):(?P<offset_minutes>\d{2}))"
)
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def parse_rfc3339(text: str) -> datetime:
    """The instant an RFC 3339 date-time names, in UTC; ValueError for anything else (a bare date, no offset, a
    number, a day that does not exist). An instant beyond what Python holds (year 1 at +14:00, year 9999 at -14:00) is
    the earliest or latest one: as the bound of a range it means "from the start" or "to the end". A leap second
    counts as second 59."""
    match = RFC3339_DATE_TIME.fullmatch(text)
    if match is None:
        raise ValueError("must be an RFC 3339 date-time with an offset, like 2026-12-03T09:00:00Z")
    second = int(match["second"])
    if second > 60:
        raise ValueError("the second must be at most 60")
    microsecond = int((match["fraction"] or "0")[:6].ljust(6, "0"))
    # ValueError for a date or hour that does not exist; the offset is taken away below
    wall_clock = datetime(
        int(match["year"]),
        int(match["month"]),
        int(match["day"]),
        int(match["hour"]),
        int(match["minute"]),
        min(second, 59),
        microsecond,
        tzinfo=UTC,
    )
    offset = timedelta(0)
    if match["sign"]:
        hours, minutes = int(match["offset_hours"]), int(match["offset_minutes"])
        if hours > 23 or minutes > 59:
            raise ValueError("the offset must be at most 23:59")
        offset = timedelta(hours=hours, minutes=minutes) * (-1 if match["sign"] == "-" else 1)
    try:
        return wall_clock - offset
    except OverflowError:
        return EARLIEST if offset > timedelta(0) else LATEST
