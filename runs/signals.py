"""Signals other apps listen to without runs importing them: a run's lifecycle events, sent once committed."""

from django.dispatch import Signal

from . import event_types

# Sent by runs.events.emit after the transaction that wrote the event commits, for the types in
# LIFECYCLE_EVENT_TYPES only; receivers get `run` (Run) and `event` (Event).
run_lifecycle_event = Signal()

# The kinds the registry marks `announced`.
LIFECYCLE_EVENT_TYPES = event_types.ANNOUNCED
