"""The worker process's one BrowserHost: started on the first run it executes, closed when the worker shuts down."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from celery.signals import worker_process_shutdown, worker_ready, worker_shutdown
from django.conf import settings

if TYPE_CHECKING:
    from runs.agent.browser import BrowserHost

log = logging.getLogger(__name__)

_lock = threading.Lock()
_host: BrowserHost | None = None


def browser_host() -> BrowserHost:
    """The process's shared host; runs on the worker's threads share its Chromium, one BrowserContext each."""
    global _host
    with _lock:
        if _host is None:
            # Imported here so the web process, which imports the tasks module to enqueue runs, needs no Playwright.
            from runs.agent.browser import BrowserHost

            _host = BrowserHost(settings.BROWSER_EXECUTABLE, pid_dir=settings.BROWSER_PID_DIR)
        return _host


def close_browser_host(**_signal_kwargs) -> None:
    """Close Chromium and the host's loop thread; a later run starts a fresh host."""
    global _host
    with _lock:
        host, _host = _host, None
    if host is None:
        return
    try:
        host.close()
    except Exception:
        log.warning("the browser host did not close cleanly", exc_info=True)


# --pool threads runs tasks in the main process (worker_shutdown); a prefork child has its own host to close.
worker_shutdown.connect(close_browser_host, weak=False)
worker_process_shutdown.connect(close_browser_host, weak=False)


def reap_orphan_browsers(**_signal_kwargs) -> None:
    """On start: kill the Chromium processes that workers killed on this machine left behind (browser_reaper)."""
    from runs.agent.browser_reaper import reap_orphans

    try:
        reap_orphans(settings.BROWSER_PID_DIR)
    except Exception:
        log.warning("could not clean up the browsers of earlier workers", exc_info=True)


worker_ready.connect(reap_orphan_browsers, weak=False)
