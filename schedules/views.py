"""The Schedules page: a workspace's schedules with their next firings and history (verdicts and judge readings), a
form to add one, pause, resume and delete."""

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace
from agent_platform.errors import ServiceError
from agent_platform.models import Workspace

from . import services
from .api import schedule_out
from .models import Schedule

SCHEDULES_SHOWN = 50


def page(
    request: OperatorRequest,
    workspace: Workspace,
    *,
    error: ServiceError | None = None,
    values: QueryDict | None = None,
) -> HttpResponse:
    schedules = [schedule_out(s) for s in Schedule.objects.for_workspace(workspace)[:SCHEDULES_SHOWN]]
    context = {"workspace": workspace, "schedules": schedules, "error": error, "values": values}
    return render(request, "schedules/list.html", context, status=error.status if error else 200)


def find(request: OperatorRequest, schedule_id: str) -> Schedule:
    schedule = Schedule.objects.for_workspace(current_workspace(request)).filter(public_id=schedule_id).first()
    if schedule is None:
        raise Http404("No such schedule in this workspace.")
    return schedule


@login_required
def schedule_list(request: OperatorRequest) -> HttpResponse:
    return page(request, current_workspace(request))


def run_fields(form: QueryDict) -> dict[str, Any]:
    """The form's launch fields: the task, and what the operator filled in of the start URL and the judge."""
    run: dict[str, Any] = {"task": form.get("task", "")}
    start_url = str(form.get("start_url", "")).strip()
    if start_url:
        run["start_url"] = start_url
    if form.get("judge") == "on":
        run["judge"] = True
    return run


@login_required
@require_POST
def schedule_create(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    try:
        services.create_schedule(
            workspace,
            name=request.POST.get("name", ""),
            cron=request.POST.get("cron", ""),
            timezone=request.POST.get("timezone", "UTC").strip() or "UTC",
            run=run_fields(request.POST),
            created_by=request.user,
        )
    except ServiceError as error:
        return page(request, workspace, error=error, values=request.POST)
    return redirect("schedules:list")


@login_required
@require_POST
def schedule_pause(request: OperatorRequest, schedule_id: str) -> HttpResponse:
    services.pause(find(request, schedule_id))
    return redirect("schedules:list")


@login_required
@require_POST
def schedule_resume(request: OperatorRequest, schedule_id: str) -> HttpResponse:
    services.resume(find(request, schedule_id))
    return redirect("schedules:list")


@login_required
@require_POST
def schedule_delete(request: OperatorRequest, schedule_id: str) -> HttpResponse:
    services.delete_schedule(find(request, schedule_id))
    return redirect("schedules:list")
