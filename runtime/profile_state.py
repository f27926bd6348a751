"""The worker's half of profiles: the browser state a run starts from (its session's, else its profile's) and the
write-back of a run's final state to its profile and session, sealed (runs.profiles; docs/profiles.md)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from runs.models import Run, Session
from runs.profiles.models import Profile
from runs.secret_box import seal, unseal


def starting_state(run: Run) -> dict[str, Any] | None:
    """A follow-up continues its session's browser; a session's first run starts from its profile as the profile is
    now (a concurrent run's later write does not reach it). Marks the profile used. SecretsUnavailable when the
    state cannot be opened."""
    session_state = unseal(run.session.browser_state)
    if session_state:
        return session_state
    if run.profile_id is None:
        return None
    profile = Profile.objects.filter(pk=run.profile_id).first()
    if profile is None:
        return None  # deleted since the launch: the run starts clean and writes nothing back
    Profile.objects.filter(pk=profile.pk).update(last_used_at=timezone.now())
    return profile.state()


def keep_session_state(run: Run, state: dict[str, Any]) -> None:
    """The session's browser for its follow-ups, sealed like a profile's (cookies are credentials)."""
    Session.objects.filter(pk=run.session_id).update(browser_state=seal(state))


def write_profile(run: Run, state: dict[str, Any]) -> Profile | None:
    """Write the run's final state to its profile in one UPDATE, so a reader sees the old state or the new one, never
    a mix: with concurrent runs on one profile, the last to finish wins. None when the run has no profile (or it was
    deleted meanwhile), or was launched with save_profile false."""
    if run.profile_id is None or not run.save_profile:
        return None
    now = timezone.now()
    written = Profile.objects.filter(pk=run.profile_id).update(
        **Profile.sealed_fields(state), updated_at=now, last_used_at=now
    )
    if not written:
        return None
    return Profile.objects.filter(pk=run.profile_id).first()


def saved_event(profile: Profile) -> dict[str, Any]:
    """What the `profile.saved` event says: which profile, its cookie domains and size; never the state."""
    return {"profile_id": profile.public_id, "cookie_domains": profile.cookie_domains, "size_bytes": profile.size_bytes}
