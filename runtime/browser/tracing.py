"""Each run's Playwright trace (actions, DOM snapshots, screenshots, network, console), kept for replay with secrets
masked.

What a trace records of a run's secrets: the agent types `{{secret:NAME}}` and the driver types the value, so the
value appears in the trace's action parameters (keyboard.type, fill), in DOM snapshots of the field (its value), in
request bodies that send it (a login form's POST) and in any page text that echoes it. Before the trace is stored,
every text entry of the archive (trace.trace, trace.network, text resources) has each secret value replaced by its
placeholder, in plain, JSON-escaped, URL-encoded and HTML-escaped spellings. Binary entries are kept as they are:
the screencast JPEGs show what the page showed, like the run's screenshots do (a password field shows dots; a
secret typed into a plain text field is visible there, as it is in the run's screenshots).

The browser's stored state is masked the same way: each cookie's and each stored value's value of the run's starting
and final state (a profile's sign-in, a session's cookies), which requests, responses and storage calls carry, is
replaced by `{{cookie:NAME}}` or `{{storage:KEY}}` (values shorter than STATE_VALUE_MIN_CHARS are left: masking
"1" or "true" everywhere would garble the trace, and they sign no one in).
"""

from __future__ import annotations

import html
import json
import logging
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage

from runs.secrets import placeholder
from runs.traces import trace_path

log = logging.getLogger(__name__)

TRACE_STOP_TIMEOUT_SECONDS = 30
TEXT_SUFFIXES = (".trace", ".network", ".stacks", ".html", ".css", ".js", ".json", ".txt", ".svg", ".xml")
# Call stacks of the worker's own code (file paths on the worker): never in an archive a person downloads
LEFT_OUT = frozenset({"trace.stacks"})


async def start(context: Any, title: str) -> None:
    """Record the context from its first page on; a context that cannot be traced still runs.

    The trace's screenshots are a screencast for the whole run: measured here at roughly 100-180 ms more per browser
    action on a loaded 2-core machine (DOM snapshots alone: about 10 ms), so it is off unless `RUN_TRACE_SCREENSHOTS`
    is set: the trace keeps DOM snapshots, network and console, and the run page's replay uses the run's own
    screenshots."""
    screenshots = bool(getattr(settings, "RUN_TRACE_SCREENSHOTS", False))
    try:
        await context.tracing.start(title=title, screenshots=screenshots, snapshots=True, sources=False)
    except Exception:
        log.warning("no trace for %s", title, exc_info=True)
        return
    without_call_stacks(context)


def without_call_stacks(context: Any) -> None:
    """Stop Playwright's client sending the Python call stack of every call to the trace, as it does while any trace
    records: a message per call, about 8 ms of the worker's CPU a step (bench/step_speed.py, docs/benchmarks.md),
    for call locations in the worker's own code that the archive would then carry to whoever downloads it (and
    mask_archive drops). Playwright has no option for it; its tracing's own reset, the one a stopping trace runs, is
    called here, and when a new version renames it the stacks come back and a test says so."""
    reset = getattr(getattr(context.tracing, "_impl_obj", None), "_reset_stack_counter", None)
    if callable(reset):
        reset()


def spellings(secret: str) -> list[str]:
    """The ways a value can appear in a trace's text: as typed, inside JSON strings, in URLs and forms, in HTML."""
    forms = {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), quote_plus(secret), html.escape(secret)}
    return sorted((form for form in forms if form), key=len, reverse=True)


STATE_VALUE_MIN_CHARS = 8


def state_values(*states: dict[str, Any] | None) -> dict[str, str]:
    """{value: what the trace shows instead} for the cookies and stored values of browser storage states."""
    shown: dict[str, str] = {}
    for state in states:
        for cookie in (state or {}).get("cookies", []):
            shown[str(cookie.get("value", ""))] = f"{{{{cookie:{cookie.get('name', '')}}}}}"
        for origin in (state or {}).get("origins", []):
            for item in origin.get("localStorage", []):
                shown[str(item.get("value", ""))] = f"{{{{storage:{item.get('name', '')}}}}}"
    return {value: label for value, label in shown.items() if len(value) >= STATE_VALUE_MIN_CHARS}


def mask_archive(
    source: Path, target: Path, secrets: dict[str, str] | None, state: dict[str, str] | None = None
) -> None:
    """Copy a trace archive with every secret value in its text entries replaced by the secret's placeholder, and
    every value of `state` ({value: shown}, state_values) by what it shows; the worker's call stacks left out."""
    replaced = (state or {}) | {value: placeholder(name) for name, value in (secrets or {}).items() if value}
    pairs = [(form.encode(), label.encode()) for value, label in replaced.items() for form in spellings(value)]
    pairs.sort(key=lambda pair: -len(pair[0]))
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as masked:
        for entry in original.infolist():
            if entry.filename in LEFT_OUT:
                continue
            data = original.read(entry)
            if pairs and is_text(entry.filename, data):
                for value, label in pairs:
                    data = data.replace(value, label)
            masked.writestr(entry, data)


def is_text(name: str, data: bytes) -> bool:
    if name.endswith(TEXT_SUFFIXES):
        return True
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def finish(
    host: Any,
    context: Any,
    run_public_id: str,
    secrets: dict[str, str] | None,
    state: Callable[[], dict[str, str]] | None = None,
) -> bool:
    """Stop the context's trace, mask it and store it for the run page's download; False if there is none. `state`
    gives the browser state's values to mask, read once the trace has stopped (a read while it records would put
    the whole state into the trace)."""
    with tempfile.TemporaryDirectory(prefix="trace-") as scratch:
        raw = Path(scratch) / "raw.zip"
        try:
            host.run(context.tracing.stop(path=str(raw)), timeout=TRACE_STOP_TIMEOUT_SECONDS)
        except Exception:
            log.info("run %s: no trace to keep", run_public_id, exc_info=True)
            return False
        if not raw.exists():
            return False
        masked = Path(scratch) / "trace.zip"
        mask_archive(raw, masked, secrets, state() if state is not None else None)
        path = trace_path(run_public_id)
        if default_storage.exists(path):
            default_storage.delete(path)
        with masked.open("rb") as handle:
            default_storage.save(path, File(handle))
    return True
