"""Operator pages for runs: the list, a run's page and its screenshots."""

from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, render

from agent_platform.access import current_workspace
from agent_platform.models import workspaces_of

from .models import Run
from .screenshots import storage_path


def run_for_user(user, run_id: str) -> Run:
    """A run of one of the user's workspaces, else 404: another workspace's run is never revealed to exist."""
    return get_object_or_404(
        Run.objects.select_related("session", "workspace"), public_id=run_id, workspace__in=workspaces_of(user)
    )


@login_required
def run_list(request):
    workspace = current_workspace(request)
    runs = Run.objects.for_workspace(workspace).select_related("session")[:50]
    return render(request, "runs/list.html", {"workspace": workspace, "runs": runs})


@login_required
def run_detail(request, run_id: str):
    run = run_for_user(request.user, run_id)
    return render(request, "runs/detail.html", {"run": run})


@login_required
def screenshot(request, run_id: str, name: str):
    run = run_for_user(request.user, run_id)
    path = storage_path(run.public_id, name)
    if path is None or not default_storage.exists(path):
        raise Http404("No such screenshot.")
    response = FileResponse(default_storage.open(path, "rb"), content_type="image/png")
    response["Cache-Control"] = "private, max-age=86400"
    return response
