"""Cron lines as Celery's crontab reads them (beat fires by the same rules): validation, the slot a firing belongs to,
and the next firings, all in the schedule's IANA time zone."""

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from celery.schedules import crontab

# How far a slot is looked for: a line like "0 0 29 2 *" (29 February) fires within four years; one that names a day
# no month has (30 February) is refused by crontab itself.
SEARCH_DAYS = 4 * 366 + 1


class CronError(ValueError):
    pass


def parse(line: str) -> crontab:
    """The crontab of a five-field line (minute hour day-of-month month day-of-week); CronError says what is wrong."""
    fields = line.split()
    if len(fields) != 5:
        raise CronError("must have 5 fields: minute hour day-of-month month day-of-week (like '0 7 * * mon-fri')")
    minute, hour, day_of_month, month_of_year, day_of_week = fields
    try:
        return crontab(minute, hour, day_of_week, day_of_month, month_of_year)
    except Exception as error:  # celery raises ValueError or its parser's ParseException, with the field's text
        raise CronError(f"is not a valid cron line: {error}") from error


def zone(name: str) -> ZoneInfo:
    if name not in available_timezones():
        raise CronError("must be an IANA time zone name, like 'Europe/Paris' or 'UTC'")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise CronError("must be an IANA time zone name, like 'Europe/Paris' or 'UTC'") from error


def _day_matches(schedule: crontab, day: date) -> bool:
    # Celery's rule: the day of the month AND the day of the week must both match (cron's isoweekday, Sunday = 0).
    return (
        day.month in schedule.month_of_year
        and day.day in schedule.day_of_month
        and day.isoweekday() % 7 in schedule.day_of_week
    )


def _local_times(schedule: crontab, day: date, tz: ZoneInfo, *, reverse: bool) -> Iterator[datetime]:
    """The day's matching wall-clock times that exist in tz, as aware datetimes (in a DST gap a time is skipped; in a
    repeated hour its first occurrence counts)."""
    for hour in sorted(schedule.hour, reverse=reverse):
        for minute in sorted(schedule.minute, reverse=reverse):
            local = datetime.combine(day, time(hour, minute), tzinfo=tz)
            if local.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == local.replace(tzinfo=None):
                yield local


def latest_slot(line: str, tz_name: str, now: datetime) -> datetime | None:
    """The latest time the line names that is at or before now, in UTC (None if none within the search window)."""
    schedule, tz = parse(line), zone(tz_name)
    local_now = now.astimezone(tz)
    for back in range(SEARCH_DAYS):
        day = local_now.date() - timedelta(days=back)
        if not _day_matches(schedule, day):
            continue
        for local in _local_times(schedule, day, tz, reverse=True):
            if local <= local_now:
                return local.astimezone(UTC)
    return None


def next_slots(line: str, tz_name: str, after: datetime, count: int = 5) -> list[datetime]:
    """The next `count` times the line names, strictly after `after`, in UTC."""
    schedule, tz = parse(line), zone(tz_name)
    local_after = after.astimezone(tz)
    found: list[datetime] = []
    for ahead in range(SEARCH_DAYS):
        day = local_after.date() + timedelta(days=ahead)
        if not _day_matches(schedule, day):
            continue
        for local in _local_times(schedule, day, tz, reverse=False):
            if local > local_after:
                found.append(local.astimezone(UTC))
                if len(found) == count:
                    return found
    return found
