"""Signals other apps (webhooks) listen to without schedules importing them, sent once the transaction commits."""

from django.dispatch import Signal

from runs import event_types

# Receivers get `schedule` (Schedule), `run` (Run), `type` (one of SCHEDULE_EVENT_TYPES) and `data` (the event's data).
schedule_event = Signal()

DATA_CHANGED = event_types.SCHEDULE_DATA_CHANGED.name
RUN_FAILED = event_types.SCHEDULE_RUN_FAILED.name
SCHEDULE_EVENT_TYPES = frozenset({DATA_CHANGED, RUN_FAILED})
