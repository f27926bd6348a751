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
from runs.secret_box import SecretsUnavailable
from runtime import browser_call, profile_state
from runtime.asking import Waiter
from runtime.browser import control, live_view
from runtime.browser.host import BrowserHost
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.toolset import PlaywrightBrowserToolset
from runtime.loop import BROWSER_SETUP_TIMEOUT_SECONDS, Heartbeat

log = logging.getLogger(__name__)


class SignInSession:
    """Owns one running sign-in run: its context, its live view and the wait for Save, Cancel or the timeout."""

    def __init__(self, run: Run, host_factory: Callable[[], BrowserHost]) -> None:
        self.run = run
        self.host_factory = host_factory
        self.host: BrowserHost | None = None
        self.toolset: PlaywrightBrowserToolset | None = None
        self.guard: NetworkGuard | None = None
        self.live: live_view.LiveView | None = None
        # The operator's mouse and keyboard over the live socket (Run.accepts_control holds for the whole sign-in).
        self.control: control.InputDispatcher | None = None

    def step(self, coro: Any, doing: str) -> Any:
        assert self.host is not None
        return browser_call.call(self.host, coro, timeout=BROWSER_SETUP_TIMEOUT_SECONDS, doing=doing)

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
        except SecretsUnavailable as error:
            message = str(error)
        except Exception as error:
            log.error("sign-in %s: the runtime failed", self.run.public_id, exc_info=error)
            message = f"The sign-in failed unexpectedly ({type(error).__name__}): {first_line(error)}"
        finally:
            try:
                self.close()
            finally:
                heartbeat.stop()
                lifecycle.finish(
                    self.run, status, success=success, output=output, error_code=code, error_message=message
                )

    def open(self) -> None:
        run = self.run
        self.host = host = self.host_factory()
        self.guard = guard = NetworkGuard(
            allowed_private_hosts=settings.BROWSER_ALLOWED_PRIVATE_HOSTS,
            allowed_domains=run.allowed_domains or None,
        )
        state = profile_state.starting_state(run)

        async def build() -> PlaywrightBrowserToolset:
            context = await host.new_context(
                storage_state=state,
                network_guard=guard,
                viewport=(settings.BROWSER_VIEWPORT_WIDTH, settings.BROWSER_VIEWPORT_HEIGHT),
            )
            toolset = PlaywrightBrowserToolset(context=context, network_guard=guard)
            await toolset.install_guard()
            return toolset

        self.toolset = toolset = self.step(build(), "open a context")
        self.live = live_view.attach(host, toolset, run.public_id)
        self.control = control.attach(host, run.public_id, toolset.active_page, accepting=True)
        try:
            self.step(toolset.open(run.start_url), "open the start URL")
            emit(run, "sign_in.opened", {"url": run.start_url})
        except browser_call.BrowserCrashed:
            raise
        except Exception as error:
            # the operator sees why in the timeline and may still navigate by hand
            emit(run, "sign_in.opened", {"url": run.start_url, "error": first_line(error)})
        self.report_blocked()

    def report_blocked(self) -> None:
        assert self.guard is not None
        for blocked in self.guard.take_unreported():
            emit(self.run, "network.blocked", {"url": blocked.url, "reason": blocked.reason, "proxy": blocked.by_proxy})

    def wait(self) -> tuple[str, bool | None, str, str, str]:
        """Until Save, Cancel or the timeout: the run's ending (status, success, output, error code, message)."""
        limit = settings.RUN_INPUT_TIMEOUT_SECONDS
        deadline = time.monotonic() + limit
        assert self.host is not None
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
            if not self.host.is_connected:
                raise browser_call.BrowserCrashed("The browser crashed or disconnected; the profile was not changed.")
            if time.monotonic() > deadline:
                return (
                    Run.Status.FAILED, None, "", Run.ErrorCode.TIMEOUT,
                    f"No one pressed Save within {limit} s; the profile was not changed.",
                )  # fmt: skip
            self.report_blocked()
            waiter.wait(deadline - time.monotonic())

    def save(self) -> tuple[str, bool | None, str, str, str]:
        assert self.toolset is not None
        state = self.step(self.toolset.storage_state(), "give its storage state")
        profile = profile_state.write_profile(self.run, state)
        if profile is None:
            return Run.Status.FAILED, None, "", "", "The profile was deleted during the sign-in; nothing was saved."
        emit(self.run, "profile.saved", profile_state.saved_event(profile))
        domains = ", ".join(profile.cookie_domains) or "no site"
        return Run.Status.SUCCEEDED, True, f"Saved profile {profile.name}: cookies for {domains}.", "", ""

    def close(self) -> None:
        try:
            if self.control is not None:
                self.control.stop()
        except Exception:
            log.warning("sign-in %s: the input dispatcher did not stop cleanly", self.run.public_id, exc_info=True)
        try:
            if self.live is not None:
                self.live.stop()
        except Exception:
            log.warning("sign-in %s: the live view did not stop cleanly", self.run.public_id, exc_info=True)
        if self.toolset is not None and self.host is not None and self.host.is_connected:
            try:
                self.step(self.toolset.close(), "close the context")
            except Exception:
                log.warning("sign-in %s: the context did not close cleanly", self.run.public_id, exc_info=True)
