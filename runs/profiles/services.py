"""What may be done to a profile: create, rename, delete, find one for a launch, start and save a sign-in by hand."""

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import Conflict, InvalidRequest
from agent_platform.models import Workspace
from agent_platform.names import clean_name
from runs.events import emit
from runs.human import wake
from runs.launch import launch
from runs.launch_rules import LaunchRequest
from runs.models import Run

from .models import NAME_MAX_CHARS, USER_ID_MAX_CHARS, Profile


def create_profile(workspace: Workspace, name: object, user_id: object = "") -> Profile:
    """An empty profile: its first run (or sign-in by hand) gives it a state."""
    return Profile.objects.create(
        workspace=workspace, name=clean_name(name, NAME_MAX_CHARS), user_id=clean_user_id(user_id)
    )


def clean_user_id(user_id: object) -> str:
    """The caller's own id for the profile's person (Browser Use's userId): kept as given, "" for none."""
    if user_id is None:
        return ""
    if not isinstance(user_id, str) or len(user_id) > USER_ID_MAX_CHARS or "\x00" in user_id:
        raise InvalidRequest.of_field("user_id", f"must be a string of at most {USER_ID_MAX_CHARS} characters")
    return user_id


def set_user_id(profile: Profile, user_id: object) -> Profile:
    profile.user_id = clean_user_id(user_id)
    profile.updated_at = timezone.now()
    profile.save(update_fields=["user_id", "updated_at"])
    return profile


def rename_profile(profile: Profile, name: object) -> Profile:
    profile.name = clean_name(name, NAME_MAX_CHARS)
    profile.updated_at = timezone.now()
    profile.save(update_fields=["name", "updated_at"])
    return profile


def delete_profile(profile: Profile) -> None:
    """Deleted at once, even while runs use it: each such run keeps the browser it started from, and its write-back
    at the end finds no row and writes nothing (docs/profiles.md). Its runs keep their history, without the link."""
    profile.delete()


def start_sign_in(profile: Profile, start_url: object, created_by: User | None = None) -> Run:
    """A sign-in by hand on `profile`: a run of kind sign_in (no agent, no model requests) whose browser starts from
    the profile at `start_url` and waits for the operator's Save or Cancel (runtime.sign_in)."""
    # Through the launch like any run: the same start_url rule, and the workspace's admission (runs.queueing) counts
    # it toward its concurrency.
    request = LaunchRequest(
        kind=Run.Kind.SIGN_IN,
        created_by=created_by,
        task=f"Sign in by hand on profile {profile.name}",
        start_url=start_url,
        profile_id=profile.public_id,
        save_profile=True,
        max_turns=1,
    )
    return launch(profile.workspace, request).run


def request_save(run: Run) -> Run:
    """The operator pressed Save on a sign-in by hand: its worker writes the profile and ends the run succeeded.
    Idempotent while the run runs; 409 for another kind of run, one not started yet (no browser has been shown) or
    one that ended."""
    if run.kind != Run.Kind.SIGN_IN:
        raise Conflict(f"run {run.public_id} is not a sign-in by hand; only those are saved by an operator.")
    with transaction.atomic():
        changed = Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING, save_requested_at__isnull=True).update(
            save_requested_at=timezone.now()
        )
        run.refresh_from_db()
        if run.status != Run.Status.RUNNING:
            raise Conflict(f"run {run.public_id} is {run.status}; only a running sign-in can be saved.")
        if changed:
            emit(run, "sign_in.save_requested", {})
            wake(run)  # the waiting worker sees it at once
    return run
