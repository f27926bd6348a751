"""System checks of the run settings, beside the launch whose limits they are held to (registered by RunsConfig)."""

from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from .launch_rules import MAX_TURNS_LIMIT


@register(Tags.compatibility)
def check_run_limits(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """A run's default turns fit what a launch may ask for; a lost run is enqueued again before it counts as orphaned."""
    problems: list[CheckMessage] = []
    turns = settings.RUN_DEFAULT_MAX_TURNS
    if not 1 <= turns <= MAX_TURNS_LIMIT:
        problems.append(
            Error(
                f"RUN_DEFAULT_MAX_TURNS is {turns}: a launch may ask for 1 to {MAX_TURNS_LIMIT} turns, so a run "
                "launched without max_turns would get a number no launch could ask for.",
                hint=f"Set RUN_DEFAULT_MAX_TURNS between 1 and {MAX_TURNS_LIMIT}.",
                id="pilothouse.E003",
            )
        )
    # A queued run older than two run time limits is taken for lost: the runs launched after it in its session stop
    # waiting for it. Enqueueing it again later than that would run it after them, out of launch order.
    orphaned_after = 2 * settings.RUN_TIME_LIMIT_SECONDS
    redeliver_after = settings.RUN_QUEUED_REDELIVER_SECONDS
    if redeliver_after >= orphaned_after:
        problems.append(
            Warning(
                f"RUN_QUEUED_REDELIVER_SECONDS ({redeliver_after}) is not below twice "
                f"RUN_TIME_LIMIT_SECONDS ({orphaned_after}): a run whose message was lost is given up as orphaned "
                "before it is enqueued again, and would then run after the session's later runs.",
                hint="Lower RUN_QUEUED_REDELIVER_SECONDS (default 300), or raise RUN_TIME_LIMIT_SECONDS.",
                id="pilothouse.W001",
            )
        )
    return problems
