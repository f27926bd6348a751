"""agent_platform.lib.timestamps: RFC 3339 in UTC ending in Z, in the two precisions our envelopes use."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from agent_platform.lib.timestamps import rfc3339


def test_a_whole_second_has_no_fraction():
    assert rfc3339(datetime(2026, 11, 30, 23, 7, 5, tzinfo=UTC)) == "2026-11-30T23:07:05Z"


def test_microseconds_are_written_in_full():
    assert rfc3339(datetime(2026, 11, 30, 23, 7, 5, 123456, tzinfo=UTC)) == "2026-11-30T23:07:05.123456Z"


def test_milliseconds_are_always_three_decimals_truncated():
    assert rfc3339(datetime(2026, 11, 30, 23, 7, 5, tzinfo=UTC), milliseconds=True) == "2026-11-30T23:07:05.000Z"
    moment = datetime(2026, 11, 30, 23, 7, 5, 123999, tzinfo=UTC)
    assert rfc3339(moment, milliseconds=True) == "2026-11-30T23:07:05.123Z"


def test_an_instant_in_another_zone_is_written_in_utc():
    berlin_winter = timezone(timedelta(hours=1))
    moment = datetime(2026, 12, 1, 0, 30, tzinfo=berlin_winter)
    assert rfc3339(moment) == "2026-11-30T23:30:00Z"
    assert rfc3339(moment, milliseconds=True) == "2026-11-30T23:30:00.000Z"


def test_none_stays_none():
    assert rfc3339(None) is None
    assert rfc3339(None, milliseconds=True) is None


def test_a_naive_datetime_is_refused():
    with pytest.raises(ValueError, match="naive"):
        rfc3339(datetime(2026, 11, 30, 23, 7, 5))  # noqa: DTZ001 (the naive datetime is the point)


def test_the_same_as_the_isoformat_it_replaces():
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    assert rfc3339(moment) == moment.isoformat().replace("+00:00", "Z")
    assert rfc3339(moment, milliseconds=True) == moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
