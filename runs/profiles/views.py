"""The Profiles page: a workspace's profiles with their cookie domains, size, last use and runs; create, delete and
sign in by hand. A sign-in by hand is a run: its page is the run page, with Save beside Cancel."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Prefetch
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace
from agent_platform.errors import ServiceError
from runs.models import Run
from runs.views import person_action

from . import services
from .models import Profile

RUNS_SHOWN = 5


@login_required
def profile_list(request: OperatorRequest, error: ServiceError | None = None, status: int = 200) -> HttpResponse:
    workspace = current_workspace(request)
    # Each profile's latest runs only (a sliced prefetch: one windowed query, however many runs a profile has had).
    recent_runs = Run.objects.order_by("-created_at", "-id").only(
        "public_id", "status", "kind", "profile_id", "created_at"
    )[:RUNS_SHOWN]
    profiles = (
        Profile.objects.for_workspace(workspace)
        .annotate(run_count=Count("runs"))
        .prefetch_related(Prefetch("runs", queryset=recent_runs, to_attr="recent_runs"))
        .order_by("-created_at", "-id")
    )
    rows = list(profiles)
    for profile in rows:
        profile.more_runs = profile.run_count - len(profile.recent_runs)  # type: ignore[attr-defined]  # annotated, prefetched
    return render(
        request,
        "runs/profiles.html",
        {"workspace": workspace, "profiles": rows, "error": error, "values": request.POST},
        status=status,
    )


@login_required
@require_POST
def profile_create(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    try:
        profile = services.create_profile(workspace, request.POST.get("name", ""))
    except ServiceError as error:
        return profile_list(request, error, status=error.status)
    messages.success(request, f"Profile {profile.name} created: sign in by hand, or launch a run with it.")
    return redirect("runs:profiles")


def profile_of(request: OperatorRequest, profile_id: str) -> Profile:
    """The current workspace's profile, else 404 (another workspace's is never revealed to exist)."""
    return get_object_or_404(Profile, public_id=profile_id, workspace=current_workspace(request))


@login_required
@require_POST
def profile_delete(request: OperatorRequest, profile_id: str) -> HttpResponse:
    profile = profile_of(request, profile_id)
    services.delete_profile(profile)
    messages.success(request, f"Profile {profile.name} deleted.")
    return redirect("runs:profiles")


@login_required
@require_POST
def profile_sign_in(request: OperatorRequest, profile_id: str) -> HttpResponse:
    profile = profile_of(request, profile_id)
    try:
        run = services.start_sign_in(profile, request.POST.get("start_url", ""), created_by=request.user)
    except ServiceError as error:
        return profile_list(request, error, status=error.status)
    return redirect("runs:detail", run.public_id)


@login_required
@require_POST
def sign_in_save(request: OperatorRequest, run_id: str) -> HttpResponse:
    return person_action(
        request,
        run_id,
        lambda run, by: services.request_save(run),
        "Saving the profile: the browser's state is written and the run ends.",
    )
