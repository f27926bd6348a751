"""A sign-in by hand: a live browser on a profile with no agent. It opens a context from the profile at the start URL
(behind the run's network policy like any run), keeps its heartbeat, and waits for the operator, who drives the page
through the interactive live view: Save writes the profile and ends the run succeeded, Cancel ends it cancelled and
RUN_INPUT_TIMEOUT_SECONDS without either ends it failed (timeout). No model request is ever sent."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings

from agent_platform.lib.text import first_line
from runs import lifecycle
from runs.events import emit
from runs.models import Run
from runs.profiles.models import state_summary
from runtime import browser_call, profile_state
from runtime.asking import Waiter
from runtime.browser.host import BrowserHost
from runtime.heartbeats import Heartbeat
from runtime.run_browser import BROWSER_SETUP_TIMEOUT_SECONDS, BrowserRefused, RunBrowser

log = logging.getLogger(__name__)

# How often the waiting sign-in reads its browser's state to show what Save would store (sign_in.state).
STATE_POLL_SECONDS = 1.0
STATE_READ_TIMEOUT_SECONDS = 10


class SignInSession:
    """Owns one running sign-in run: its browser (runtime.run_browser, driven by hand: the operator's mouse and keyboard
    over the live socket are accepted for the whole sign-in) and the wait for Save, Cancel or the timeout."""

    def __init__(self, run: Run, host_factory: Callable[[], BrowserHost]) -> None:
        self.run = run
        self.browser = RunBrowser(run, host_factory, event=lambda type, data: emit(run, type, data), by_hand=True)
        self.shown: dict[str, Any] | None = None  # the last sign_in.state's summary

    def execute(self) -> None:
        heartbeat = Heartbeat(self.run, self.run.handovers)
        heartbeat.start()
        status: str = Run.Status.FAILED
        success, output, code, message = None, "", "", ""
        try:
            self.open()
            with heartbeat.waiting_for_person():  # bounded by RUN_INPUT_TIMEOUT_SECONDS, not the agent's limit
                status, success, output, code, message = self.wait()
        except browser_call.BrowserCrashed as error:
            code, message = Run.ErrorCode.BROWSER_ERROR, str(error)
        except BrowserRefused as error:
            code, message = error.error_code, str(error)
        except Exception as error:
            log.error("sign-in %s: the runtime failed", self.run.public_id, exc_info=error)
            message = f"The sign-in failed unexpectedly ({type(error).__name__}): {first_line(error)}"
        finally:
            try:
                self.browser.discard()  # the profile was written on Save, or is left as it was
            finally:
                heartbeat.stop()
                lifecycle.finish(
                    self.run, status, success=success, output=output, error_code=code, error_message=message
                )

    def open(self) -> None:
        run, browser = self.run, self.browser
        browser.open()
        problem = browser.open_page(run.start_url, doing="open the start URL", timeout=BROWSER_SETUP_TIMEOUT_SECONDS)
        # the operator sees why in the timeline and may still navigate by hand
        opened: dict[str, Any] = {"url": run.start_url}
        if problem:
            opened["error"] = problem.strip().splitlines()[0]
        emit(run, "sign_in.opened", opened)
        browser.report_blocked()
        self.report_state()

    def report_state(self) -> None:
        """What Save would store now, read from the live context (as Save reads it) and told as a `sign_in.state`
        event when it changed: cookie domains with counts, storage origins, whether it looks signed in, never a value
        or a cookie's name. A read that fails is skipped: the next poll tries again, and Save reads for itself."""
        browser = self.browser
        try:
            state = browser.call(
                browser.toolset.storage_state(), doing="give its storage state", timeout=STATE_READ_TIMEOUT_SECONDS
            )
        except Exception as error:
            log.info("sign-in %s: state not read: %s", self.run.public_id, first_line(error))
            return
        summary = state_summary(state, browser.current_url())
        if summary != self.shown:
            self.shown = summary
            emit(self.run, "sign_in.state", summary)

    def wait(self) -> tuple[str, bool | None, str, str, str]:
        """Until Save, Cancel or the timeout: the run's ending (status, success, output, error code, message)."""
        limit = settings.RUN_INPUT_TIMEOUT_SECONDS
        deadline = time.monotonic() + limit
        waiter = Waiter(self.run.public_id)  # Save wakes it at once; Cancel is seen at the next database read
        while True:
            row = Run.objects.filter(pk=self.run.pk).values("save_requested_at", "cancel_requested_at").first()
            if row is None or row["cancel_requested_at"] is not None:
                return (
                    Run.Status.CANCELLED, None, "", Run.ErrorCode.CANCELLED,
                    "Cancelled by an operator; the profile was not changed.",
                )  # fmt: skip
            if row["save_requested_at"] is not None:
                return self.save()
            if not self.browser.host.is_connected:
                raise browser_call.BrowserCrashed("The browser crashed or disconnected; the profile was not changed.")
            if time.monotonic() > deadline:
                return (
                    Run.Status.FAILED, None, "", Run.ErrorCode.TIMEOUT,
                    f"No one pressed Save within {limit} s; the profile was not changed.",
                )  # fmt: skip
            self.browser.report_blocked()
            self.report_state()
            waiter.wait(min(deadline - time.monotonic(), STATE_POLL_SECONDS))

    def save(self) -> tuple[str, bool | None, str, str, str]:
        browser = self.browser
        state: dict[str, Any] = browser.call(
            browser.toolset.storage_state(), doing="give its storage state", timeout=BROWSER_SETUP_TIMEOUT_SECONDS
        )
        profile = profile_state.write_profile(self.run, state)
        if profile is None:
            return Run.Status.FAILED, None, "", "", "The profile was deleted during the sign-in; nothing was saved."
        emit(self.run, "profile.saved", profile_state.saved_event(profile))
        domains = ", ".join(profile.cookie_domains) or "no site"
        return Run.Status.SUCCEEDED, True, f"Saved profile {profile.name}: cookies for {domains}.", "", ""
