"""One browser step of a run, run on the worker's browser host and translated one way: a step that outlives its
timeout means a hung browser, a step that fails with the browser gone means a crash; both are BrowserCrashed, which
ends the run browser_error. Any other failure is the step's own and reaches the caller as it was raised."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agent_platform.lib.text import first_line
from runtime.browser.host import BrowserHost

T = TypeVar("T")

CRASHED = "The browser crashed or disconnected."


class BrowserCrashed(Exception):
    """The browser died or hung: not the agent's failure, and nothing more can be done in this run."""


def call(
    host: BrowserHost,
    step: Coroutine[Any, Any, T],
    *,
    timeout: float,
    doing: str,
    crashed: str | Callable[[str], str] = CRASHED,
) -> T:
    """Run `step` on `host` within `timeout` seconds. `doing` completes "The browser did not ... within N s." for a
    timeout; `crashed` is the message when the step failed and the browser is no longer connected (a callable gets
    the error's first line)."""
    try:
        result = host.run(step, timeout=timeout)
    except TimeoutError:
        raise BrowserCrashed(f"The browser did not {doing} within {timeout} s.") from None
    except BrowserCrashed:
        raise
    except Exception as error:
        if not host.is_connected:
            message = crashed(first_line(error)) if callable(crashed) else crashed
            raise BrowserCrashed(message) from error
        raise
    return result


def crashed_if_gone(host: BrowserHost, *, failed: bool, message: str) -> None:
    """A step that reports its failure in its result instead of raising (a member's error block): with the browser
    no longer connected, that failure is a crash."""
    if failed and not host.is_connected:
        raise BrowserCrashed(message)
