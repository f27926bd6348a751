"""Signals of the evals app: a batch finished (every run ended and, where judged, was judged)."""

from django.dispatch import Signal

# Sent once per batch, after the transaction that marked it finished commits; receivers get `batch` (Batch).
batch_finished = Signal()
