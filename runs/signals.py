"""Signals other apps listen to without runs importing them: a run's lifecycle events, sent once committed."""

from django.dispatch import Signal

# Sent by runs.events.emit after the transaction that wrote the event commits, for the types in
# LIFECYCLE_EVENT_TYPES only; receivers get `run` (Run) and `event` (Event).
run_lifecycle_event = Signal()

LIFECYCLE_EVENT_TYPES = frozenset({"run.finished", "run.judged", "file.downloaded", "run.input_requested"})
