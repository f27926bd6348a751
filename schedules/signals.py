"""Signals other apps (webhooks) listen to without schedules importing them, sent once the transaction commits."""

from django.dispatch import Signal

# Receivers get `schedule` (Schedule), `run` (Run), `type` (one of SCHEDULE_EVENT_TYPES) and `data` (the event's data).
schedule_event = Signal()

DATA_CHANGED = "schedule.data_changed"
RUN_FAILED = "schedule.run_failed"
SCHEDULE_EVENT_TYPES = frozenset({DATA_CHANGED, RUN_FAILED})
