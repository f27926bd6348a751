"""The schedules API: cron schedules that launch ordinary runs, their next firings and their history."""

from datetime import datetime
from typing import Annotated, Any

from django.utils import timezone
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictStr

from agent_platform.api import ERROR_RESPONSES, ApiRequest, PathId
from agent_platform.lookup import find

from . import services
from .cron import next_slots
from .models import Firing, Schedule

router = Router(tags=["schedules"])
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
SchedulePathId = Annotated[str, PathId("schedule", "sch")]

NEXT_FIRINGS = 5
HISTORY_LENGTH = 20

RUN_EXAMPLE: dict[str, Any] = {
    "task": "Read the price of the Espresso Machine on the shop's product page.",
    "start_url": "http://127.0.0.1:8001/",
    "output_schema": {"type": "object", "properties": {"price": {"type": "number"}}, "required": ["price"]},
    "judge": True,
}
SCHEDULE_EXAMPLE: dict[str, Any] = {
    "name": "Espresso machine price, weekday mornings",
    "cron": "0 7 * * mon-fri",
    "timezone": "Europe/Paris",
    "run": RUN_EXAMPLE,
    "enabled": True,
}


class ScheduleIn(Schema):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [SCHEDULE_EXAMPLE]})

    name: StrictStr = Field(description="A name for people (at most 200 characters).")
    cron: StrictStr = Field(
        description="Five fields: minute hour day-of-month month day-of-week, as Celery's crontab reads them "
        "(when both days are restricted, both must match).",
        examples=["*/15 * * * *", "0 7 * * mon-fri"],
    )
    timezone: StrictStr = Field("UTC", description="The IANA time zone the cron line is read in.")
    run: dict[str, Any] = Field(
        description="The launch fields of POST /api/v1/runs each firing launches with (no session_id, no secrets), "
        "checked now as a launch checks them; or recipe_id and parameters (with the other launch fields, but no "
        "task, start_url or output_schema, which are the recipe's) to replay a recipe (docs/recipes.md).",
        examples=[RUN_EXAMPLE],
    )
    enabled: StrictBool = Field(True, description="Whether it fires; false creates it paused.")


class SchedulePatch(Schema):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"cron": "30 6 * * *"}, {"enabled": False}]}
    )

    name: StrictStr | None = None
    cron: StrictStr | None = None
    timezone: StrictStr | None = None
    run: dict[str, Any] | None = Field(None, description="Replaces the whole run (launch fields).")
    enabled: StrictBool | None = Field(None, description="true resumes (and clears the failure count); false pauses.")


class FiringOut(Schema):
    slot: datetime = Field(description="The cron time this firing belongs to (UTC).")
    fired_at: datetime
    run_id: str | None
    status: str | None = Field(description="The run's status (queued, running, succeeded, failed, cancelled).")
    verdict: str | None = Field(description="The run's latest judge verdict: pass, fail or uncertain.")
    judge_reason: str | None = Field(description="The judge's reading of the run.")
    error: str | None = Field(description="Why the run could not be launched, when it could not.")


class ScheduleOut(Schema):
    id: str
    name: str
    cron: str
    timezone: str
    run: dict[str, Any]
    enabled: bool
    consecutive_failures: int
    paused_reason: str | None
    next_firings: list[datetime] = Field(description="The next 5 times the cron line names (UTC); empty when paused.")
    history: list[FiringOut] = Field(description="The latest 20 firings, newest first.")
    created_at: datetime
    updated_at: datetime


class ScheduleListOut(Schema):
    schedules: list[ScheduleOut]


def firing_out(firing: Firing) -> dict[str, Any]:
    run = firing.run
    judgment = run.judgments.first() if run is not None else None
    return {
        "slot": firing.slot,
        "fired_at": firing.fired_at,
        "run_id": run.public_id if run else None,
        "status": run.status if run else None,
        "verdict": judgment.verdict if judgment else None,
        "judge_reason": judgment.reason if judgment else None,
        "error": firing.error or None,
    }


def schedule_out(schedule: Schedule) -> dict[str, Any]:
    firings = schedule.firings.select_related("run").prefetch_related("run__judgments")[:HISTORY_LENGTH]
    return {
        "id": schedule.public_id,
        "name": schedule.name,
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "run": schedule.run,
        "enabled": schedule.enabled,
        "consecutive_failures": schedule.consecutive_failures,
        "paused_reason": schedule.paused_reason or None,
        "next_firings": next_slots(schedule.cron, schedule.timezone, timezone.now(), NEXT_FIRINGS)
        if schedule.enabled
        else [],
        "history": [firing_out(f) for f in firings],
        "created_at": schedule.created_at,
        "updated_at": schedule.updated_at,
    }


def find_schedule(request: ApiRequest, schedule_id: str) -> Schedule:
    return find(Schedule.objects.for_workspace(request.workspace), schedule_id, "schedule")


@router.post(
    "/schedules",
    response={201: ScheduleOut, **ERROR_RESPONSES},
    summary="Create a schedule",
    description="Each time the cron line names (in the time zone), one run is launched with the run's launch fields, "
    "once per firing however many beat processes run (docs/schedules.md).",
)
def create_schedule(request: ApiRequest, payload: ScheduleIn) -> Status[dict[str, Any]]:
    schedule = services.create_schedule(request.workspace, **payload.model_dump())
    return Status(201, schedule_out(schedule))


@router.get("/schedules", response={200: ScheduleListOut, **ERROR_RESPONSES}, summary="List schedules")
def list_schedules(request: ApiRequest) -> dict[str, Any]:
    return {"schedules": [schedule_out(s) for s in Schedule.objects.for_workspace(request.workspace)]}


@router.get("/schedules/{schedule_id}", response={200: ScheduleOut, **ERROR_RESPONSES}, summary="Get a schedule")
def get_schedule(request: ApiRequest, schedule_id: SchedulePathId) -> dict[str, Any]:
    return schedule_out(find_schedule(request, schedule_id))


@router.patch("/schedules/{schedule_id}", response={200: ScheduleOut, **ERROR_RESPONSES}, summary="Change a schedule")
def update_schedule(request: ApiRequest, schedule_id: SchedulePathId, payload: SchedulePatch) -> dict[str, Any]:
    changes = payload.model_dump(exclude_unset=True)
    return schedule_out(services.update_schedule(find_schedule(request, schedule_id), changes))


@router.delete("/schedules/{schedule_id}", response={204: None, **ERROR_RESPONSES}, summary="Delete a schedule")
def delete_schedule(request: ApiRequest, schedule_id: SchedulePathId) -> Status[None]:
    services.delete_schedule(find_schedule(request, schedule_id))
    return Status(204, None)


@router.post(
    "/schedules/{schedule_id}/pause", response={200: ScheduleOut, **ERROR_RESPONSES}, summary="Pause a schedule"
)
def pause_schedule(request: ApiRequest, schedule_id: SchedulePathId) -> dict[str, Any]:
    return schedule_out(services.pause(find_schedule(request, schedule_id)))


@router.post(
    "/schedules/{schedule_id}/resume",
    response={200: ScheduleOut, **ERROR_RESPONSES},
    summary="Resume a schedule",
    description="Enables it again with its failure count at zero.",
)
def resume_schedule(request: ApiRequest, schedule_id: SchedulePathId) -> dict[str, Any]:
    return schedule_out(services.resume(find_schedule(request, schedule_id)))
