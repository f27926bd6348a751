"""Where a run's Playwright trace is stored (the worker writes it: runtime.browser.tracing), for the pages that
serve it."""

from django.core.files.storage import default_storage


def trace_path(run_public_id: str) -> str:
    return f"traces/{run_public_id}/trace.zip"


def has_trace(run_public_id: str) -> bool:
    return default_storage.exists(trace_path(run_public_id))
