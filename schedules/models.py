"""A schedule (a cron line in a time zone and the launch fields of its runs) and its firings, one per cron slot."""

from django.conf import settings
from django.db import models
from django.utils.timezone import now
from django_celery_beat.models import PeriodicTask

from agent_platform.ids import new_public_id
from agent_platform.models import Workspace
from runs.models import Run


def schedule_id() -> str:
    return new_public_id("sch")


class ScheduleQuerySet(models.QuerySet["Schedule"]):
    def for_workspace(self, workspace: Workspace) -> "ScheduleQuerySet":
        return self.filter(workspace=workspace)


class Schedule(models.Model):
    """Launches a run with `run`'s launch fields at every time `cron` names in `timezone`.

    Beat's side is the PeriodicTask (and its CrontabSchedule) the schedule owns: created, changed and deleted with it
    by schedules.services, so beat needs no scheduler of ours.
    """

    public_id = models.CharField(max_length=40, unique=True, default=schedule_id, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="schedules")
    name = models.CharField(max_length=200)
    cron = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64, default="UTC")
    # The launch fields of runs.launch.launch_run (task, start_url, model, output_schema, judge...), as the operator
    # gave them; a recipe's schedule holds recipe_id and parameters instead of task, start_url and output_schema.
    run = models.JSONField(default=dict)
    enabled = models.BooleanField(default=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    paused_reason = models.CharField(max_length=500, blank=True)
    periodic_task = models.OneToOneField(
        PeriodicTask, null=True, blank=True, on_delete=models.SET_NULL, related_name="pilothouse_schedule"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ScheduleQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.public_id


class Firing(models.Model):
    """One cron slot of a schedule, recorded before its run is launched: the unique (schedule, slot) is what makes a
    second beat, or a beat restarted mid-slot, launch nothing."""

    class Outcome(models.TextChoices):
        PENDING = ""  # no run yet, or its run (or its judgment) has not ended
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        NEUTRAL = "neutral"  # cancelled, or judged uncertain: neither resets nor counts toward the pause

    schedule = models.ForeignKey(Schedule, on_delete=models.CASCADE, related_name="firings")
    slot = models.DateTimeField()
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="schedule_firings")
    error = models.TextField(blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.PENDING, blank=True)
    fired_at = models.DateTimeField(default=now)

    class Meta:
        ordering = ["-slot", "-id"]
        constraints = [models.UniqueConstraint(fields=["schedule", "slot"], name="firing_once_per_slot")]

    def __str__(self) -> str:
        return f"{self.schedule} {self.slot.isoformat()}"
