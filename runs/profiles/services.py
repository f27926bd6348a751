"""What may be done to a profile: create, rename, delete, find one for a launch, start and save a sign-in by hand."""

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import Conflict, InvalidRequest
from agent_platform.models import Workspace
from agent_platform.names import clean_name
from runs import lifecycle, queueing
from runs.events import emit
from runs.human import wake
from runs.launch import clean_start_url
from runs.models import Run, Session

from .models import NAME_MAX_CHARS, Profile


def create_profile(workspace: Workspace, name: object) -> Profile:
    """An empty profile: its first run (or sign-in by hand) gives it a state."""
    return Profile.objects.create(workspace=workspace, name=clean_name(name, NAME_MAX_CHARS))


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
    url = clean_start_url(start_url)
    if not url:
        raise InvalidRequest.of_field("start_url", "is required: the page where the operator signs in")
    with transaction.atomic():
        queueing.refuse_beyond_queued_limit(profile.workspace)
        session = Session.objects.create(workspace=profile.workspace, created_by=created_by)
        run = Run.objects.create(
            workspace=profile.workspace,
            session=session,
            created_by=created_by,
            kind=Run.Kind.SIGN_IN,
            profile=profile,
            save_profile=True,
            task=f"Sign in by hand on profile {profile.name}",
            start_url=url,
            model="",
            max_turns=1,
        )
        # Through the workspace's admission like any launch (runs.queueing): it counts toward its concurrency.
        transaction.on_commit(lambda: lifecycle.admit(profile.workspace_id))
    return run


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
