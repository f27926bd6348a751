"""Instants as RFC 3339 text in UTC, the way our API envelopes, events and webhooks write them ("…Z")."""

from datetime import UTC, datetime
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
