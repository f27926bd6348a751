"""Schedule state changes: create, change, pause, resume and delete (with the beat rows each owns), a firing
launched once per slot, and a run's end accounted to its schedule."""

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from agent_platform.errors import InvalidRequest, RateLimited, ServiceError, ServiceUnavailable
from agent_platform.models import Workspace
from runs.events import emit
from runs.launch import Launched, launch
from runs.launch_rules import LaunchRequest
from runs.models import Run
from runs.recipes.services import launch_replay

from . import validation
from .cron import latest_slot
from .diff import is_empty, json_diff
from .models import Firing, Schedule
from .signals import DATA_CHANGED, RUN_FAILED, schedule_event

log = logging.getLogger(__name__)

FIRE_TASK = "schedules.tasks.fire"


# --- beat's rows -----------------------------------------------------------------------------------------------------


def sync_beat(schedule: Schedule) -> None:
    """Make the schedule's PeriodicTask and CrontabSchedule say what the schedule says (creating them the first time).
    Saving the PeriodicTask tells a running DatabaseScheduler to reload."""
    minute, hour, day_of_month, month_of_year, day_of_week = schedule.cron.split()
    crontab_fields = {
        "minute": minute, "hour": hour, "day_of_month": day_of_month, "month_of_year": month_of_year,
        "day_of_week": day_of_week, "timezone": schedule.timezone,
    }  # fmt: skip
    task = schedule.periodic_task
    if task is None:
        crontab = CrontabSchedule.objects.create(**crontab_fields)
        task = PeriodicTask.objects.create(
            name=f"schedule {schedule.public_id}",
            task=FIRE_TASK,
            crontab=crontab,
            args=json.dumps([schedule.public_id]),
            enabled=schedule.enabled,
            description=schedule.name[:200],
        )
        schedule.periodic_task = task
        Schedule.objects.filter(pk=schedule.pk).update(periodic_task=task)
        return
    CrontabSchedule.objects.filter(pk=task.crontab_id).update(**crontab_fields)  # the task's own: created above
    task.enabled = schedule.enabled
    task.description = schedule.name[:200]
    task.save()


def delete_beat(schedule: Schedule) -> None:
    """Remove the schedule's PeriodicTask and its CrontabSchedule (after the schedule's own row is gone, however it
    went: this API, the admin, its workspace's deletion; schedules.receivers calls it)."""
    task = PeriodicTask.objects.filter(pk=schedule.periodic_task_id).first()
    if task is None:
        return
    crontab_id = task.crontab_id
    task.delete()
    if crontab_id is not None and not PeriodicTask.objects.filter(crontab_id=crontab_id).exists():
        CrontabSchedule.objects.filter(pk=crontab_id).delete()


# --- the operator's changes -----------------------------------------------------------------------------------------


def create_schedule(
    workspace: Workspace,
    *,
    name: object,
    cron: object,
    timezone: object = "UTC",
    run: object,
    enabled: object = True,
    created_by: User | None = None,
) -> Schedule:
    fields = {
        "name": validation.clean_name(name),
        "cron": validation.clean_cron(cron),
        "timezone": validation.clean_timezone(timezone),
        "run": validation.clean_run(workspace, run),
        "enabled": clean_enabled(enabled),
    }
    with transaction.atomic():
        schedule = Schedule.objects.create(workspace=workspace, created_by=created_by, **fields)
        sync_beat(schedule)
    return schedule


def update_schedule(schedule: Schedule, changes: dict[str, Any]) -> Schedule:
    """Change the given fields (name, cron, timezone, run, enabled); enabling a paused schedule resumes it."""
    cleaners = {
        "name": validation.clean_name,
        "cron": validation.clean_cron,
        "timezone": validation.clean_timezone,
        "run": lambda run: validation.clean_run(schedule.workspace, run),
        "enabled": clean_enabled,
    }
    cleaned = {field: cleaners[field](value) for field, value in changes.items() if field in cleaners}
    with transaction.atomic():
        schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
        for field, value in cleaned.items():
            setattr(schedule, field, value)
        if cleaned.get("enabled") is True:
            schedule.paused_reason = ""
            schedule.consecutive_failures = 0
        elif cleaned.get("enabled") is False and not schedule.paused_reason:
            schedule.paused_reason = "Paused by an operator."
        schedule.save()
        sync_beat(schedule)
    return schedule


def clean_enabled(enabled: object) -> bool:
    if not isinstance(enabled, bool):
        raise InvalidRequest.of_field("enabled", "must be true or false")
    return enabled


def pause(schedule: Schedule) -> Schedule:
    """Disable; a schedule that paused itself keeps saying why."""
    return update_schedule(schedule, {"enabled": False})


def resume(schedule: Schedule) -> Schedule:
    """Enable again, its failure count started afresh (the operator has looked at why it paused)."""
    return update_schedule(schedule, {"enabled": True})


def delete_schedule(schedule: Schedule) -> None:
    """The schedule, its firings and its beat rows go; the runs it launched stay."""
    schedule.delete()  # its beat rows follow (schedules.receivers)


# --- firing -----------------------------------------------------------------------------------------------------------


# A firing's task may run a moment before the time beat meant (beat and the worker on different clocks): its slot is
# the latest the cron names up to this much after the worker's now, so a firing is never taken for the one before.
# Far less than a minute, the cron's finest step: a message that is merely late still fires its own slot.
CLOCK_SKEW_GRACE = timedelta(seconds=5)


def fire(schedule_id: str, now: datetime) -> Firing | None:
    """Launch the run of the schedule's slot at `now` (the latest time its cron names at or before now), once.

    The Firing row, unique on (schedule, slot), is written in the launch's transaction, so a second beat or a beat
    restarted within the slot finds it and launches nothing. Returns the new firing, or None when nothing was
    launched.
    """
    schedule = Schedule.objects.filter(public_id=schedule_id).select_related("workspace", "created_by").first()
    if schedule is None or not schedule.enabled:
        return None  # deleted or paused after beat sent the message
    slot = latest_slot(schedule.cron, schedule.timezone, now + CLOCK_SKEW_GRACE)
    if slot is None or Firing.objects.filter(schedule=schedule, slot=slot).exists():
        return None
    with transaction.atomic():
        try:
            with transaction.atomic():
                firing = Firing.objects.create(schedule=schedule, slot=slot)
        except IntegrityError:
            # Another beat's message for the same slot got there first (its row committed, or is committing).
            log.info("schedule %s: slot %s already fired", schedule.public_id, slot.isoformat())
            return None
        try:
            with transaction.atomic():
                launched = launch_scheduled(schedule)
        except ServiceError as error:
            # The launch refused: the firing records why. A refusal that lasts (a model retired since, a cap
            # lowered) counts as a failure, so a schedule that can no longer launch pauses itself like one whose runs
            # fail; a passing one (the Models API away, the workspace's queue full) does not.
            firing.error = error.message
            firing.outcome = Firing.Outcome.FAILED
            firing.save(update_fields=["error", "outcome"])
            if not isinstance(error, ServiceUnavailable | RateLimited):
                count_failure(schedule, f"its run could not be launched: {error.message}")
            return firing
        firing.run = launched.run
        firing.save(update_fields=["run"])
    return firing


def launch_scheduled(schedule: Schedule) -> Launched:
    """The schedule's run launched as any door launches one (a recipe's replay when it names a recipe)."""
    fields = dict(schedule.run)
    recipe_id, parameters = fields.pop("recipe_id", None), fields.pop("parameters", None)
    request = LaunchRequest.of(fields, created_by=schedule.created_by)
    if recipe_id is not None:
        return launch_replay(schedule.workspace, request, recipe_id=recipe_id, parameters=parameters)
    return launch(schedule.workspace, request)


# --- a run's end ------------------------------------------------------------------------------------------------------


def settle(run: Run, event_type: str) -> None:
    """Account a scheduled run's end (run.finished) or its judgment (run.judged) to its schedule, once per firing."""
    firing = Firing.objects.filter(run=run).select_related("schedule").first()
    if firing is None:
        return
    if event_type == "run.finished":
        compare_data(firing, run)
        if run.status == Run.Status.CANCELLED:
            settle_once(firing, Firing.Outcome.NEUTRAL)
        elif run.status == Run.Status.FAILED or run.success is False:
            fail(
                firing,
                run,
                f"its run {run.public_id} ended {run.status}" + (f" ({run.error_code})" if run.error_code else ""),
            )
        elif not run.judge:
            succeed(firing)
        # a judged run that succeeded is settled by its judgment
    elif event_type == "run.judged":
        judgment = run.judgments.first()
        if judgment is None:
            return
        if judgment.verdict == judgment.Verdict.FAIL:
            fail(firing, run, f"the judge failed its run {run.public_id}: {judgment.reason[:200]}")
        elif judgment.verdict == judgment.Verdict.PASS:
            succeed(firing)
        else:
            settle_once(firing, Firing.Outcome.NEUTRAL)


def settle_once(firing: Firing, outcome: str) -> bool:
    """Record the firing's outcome if none is; False when it was settled already (a re-judgment counts once)."""
    return bool(Firing.objects.filter(pk=firing.pk, outcome=Firing.Outcome.PENDING).update(outcome=outcome))


def succeed(firing: Firing) -> None:
    if settle_once(firing, Firing.Outcome.SUCCEEDED):
        Schedule.objects.filter(pk=firing.schedule_id).update(consecutive_failures=0)


def fail(firing: Firing, run: Run, why: str) -> None:
    if not settle_once(firing, Firing.Outcome.FAILED):
        return
    schedule = count_failure(firing.schedule, why)
    announce(schedule, run, RUN_FAILED, {
        "schedule_id": schedule.public_id, "run_id": run.public_id, "reason": why,
        "consecutive_failures": schedule.consecutive_failures, "paused": not schedule.enabled,
    })  # fmt: skip


def count_failure(schedule: Schedule, why: str) -> Schedule:
    """One more failure in a row; at SCHEDULE_MAX_CONSECUTIVE_FAILURES the schedule pauses itself and says why."""
    limit = settings.SCHEDULE_MAX_CONSECUTIVE_FAILURES
    with transaction.atomic():
        Schedule.objects.filter(pk=schedule.pk).update(consecutive_failures=F("consecutive_failures") + 1)
        schedule = Schedule.objects.select_for_update().get(pk=schedule.pk)
        if schedule.enabled and schedule.consecutive_failures >= limit:
            schedule.enabled = False
            schedule.paused_reason = (
                f"Paused after {schedule.consecutive_failures} failures in a row; the last: {why}"
            )[:500]
            schedule.save(update_fields=["enabled", "paused_reason", "updated_at"])
            sync_beat(schedule)
    return schedule


def compare_data(firing: Firing, run: Run) -> None:
    """A succeeded run whose data differs from the schedule's previous succeeded run's raises schedule.data_changed."""
    if run.status != Run.Status.SUCCEEDED:
        return
    previous = (
        Firing.objects.filter(schedule_id=firing.schedule_id, slot__lt=firing.slot, run__status=Run.Status.SUCCEEDED)
        .select_related("run")
        .order_by("-slot")
        .first()
    )
    if previous is None or previous.run is None:
        return
    diff = json_diff(previous.run.data, run.data)
    if is_empty(diff):
        return
    announce(firing.schedule, run, DATA_CHANGED, {
        "schedule_id": firing.schedule.public_id, "run_id": run.public_id,
        "previous_run_id": previous.run.public_id, "diff": diff,
    })  # fmt: skip


def announce(schedule: Schedule, run: Run, event_type: str, data: dict[str, Any]) -> None:
    """The run's event (its page and stream show it) and, once committed, the signal webhooks listen to."""
    emit(run, event_type, data)
    transaction.on_commit(
        lambda: schedule_event.send_robust(Schedule, schedule=schedule, run=run, type=event_type, data=data)
    )
