"""One browser step of a run, run on the worker's browser host and translated one way: a step that outlives its
timeout means a hung browser, a step that fails with the browser gone means a crash; both are BrowserCrashed. A step
watched for the browser's loss (runtime.browser.recovery) fails the moment its tab crashes or Chromium exits, and its
BrowserCrashed carries the cause, which the loop may recover from; a hang has none and ends the run browser_error.
Any other failure is the step's own and reaches the caller as it was raised."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agent_platform import db
from agent_platform.lib.text import first_line
from runtime.browser.host import BrowserHost
from runtime.browser.recovery import BROWSER_EXIT, BrowserLost, LossWatch

T = TypeVar("T")

CRASHED = "The browser crashed or disconnected."


class BrowserCrashed(Exception):
    """The browser died or hung: not the agent's failure. With a `cause` (recovery.RENDERER_CRASH or BROWSER_EXIT)
    the run may go on in a fresh tab or browser; without one (a hang) nothing more can be done in this run."""

    def __init__(self, message: str, *, cause: str | None = None, url: str = "") -> None:
        super().__init__(message)
        self.cause = cause
        self.url = url


def call(
    host: BrowserHost,
    step: Coroutine[Any, Any, T],
    *,
    timeout: float,
    doing: str,
    crashed: str | Callable[[str], str] = CRASHED,
    watch: LossWatch | None = None,
) -> T:
    """Run `step` on `host` within `timeout` seconds, raced against `watch` when given. `doing` completes "The
    browser did not ... within N s." for a timeout; `crashed` is the message when the step failed and the browser is
    no longer connected (a callable gets the error's first line)."""
    db.release()  # a page may take its time: no connection held meanwhile
    try:
        result = host.run(watch.race(step) if watch is not None else step, timeout=timeout)
    except TimeoutError:
        raise BrowserCrashed(f"The browser did not {doing} within {timeout} s.") from None
    except BrowserCrashed:
        raise
    except BrowserLost as lost:
        raise BrowserCrashed(str(lost), cause=lost.cause, url=lost.url) from None
    except Exception as error:
        if not host.is_connected:
            message = crashed(first_line(error)) if callable(crashed) else crashed
            raise BrowserCrashed(message, cause=BROWSER_EXIT) from error
        raise
    return result


def crashed_if_gone(host: BrowserHost, *, failed: bool, message: str, watch: LossWatch | None = None) -> None:
    """A step that reports its failure in its result instead of raising (a member's error block): with the browser
    no longer connected, or its tab lost, that failure is a crash."""
    if not failed:
        return
    lost = watch.lost() if watch is not None else None
    if lost is not None:
        raise BrowserCrashed(str(lost), cause=lost.cause, url=lost.url)
    if not host.is_connected:
        raise BrowserCrashed(message, cause=BROWSER_EXIT)
