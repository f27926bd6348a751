"""Share links: a session shown read-only to whoever holds its link, signed in or not. One link per session, made from
its page, /api/v1 or v4; turned off (and on again, with the same token) by its workspace; it may expire; each time it
is opened its view count goes up. What the shared page may show is decided in runs.share_views, never here."""

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from agent_platform.errors import InvalidRequest
from agent_platform.lib.timestamps import rfc3339

from .models import Session, SessionShare

# How long a link may be made to last, at most; it may also be made to last for ever (no expiry).
EXPIRES_IN_MAX = timedelta(days=365)


class ShareClosed(Exception):
    """The link was turned off, or its time ran out: the page answers 410 Gone."""


def clean_expires_in(value: object, field: str = "expires_in_seconds") -> datetime | None:
    """A lifetime in whole seconds from now (at most a year), or None for a link that does not expire."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest.of_field(field, "must be a whole number of seconds, or null for no expiry")
    if value < 60 or value > EXPIRES_IN_MAX.total_seconds():
        raise InvalidRequest.of_field(field, f"must be between 60 and {int(EXPIRES_IN_MAX.total_seconds())} seconds")
    return timezone.now() + timedelta(seconds=value)


def share_session(
    session: Session,
    *,
    by: User | AnonymousUser | None = None,
    expires_at: datetime | None = None,
    set_expiry: bool = False,
) -> SessionShare:
    """The session's link, turned on: made on first use, its token kept after (Browser Use's create_share). With
    `set_expiry` its expiry becomes `expires_at` (None: never)."""
    creator = by if isinstance(by, User) else None
    with transaction.atomic():
        share, created = SessionShare.objects.select_for_update().get_or_create(
            session=session, defaults={"created_by": creator, "expires_at": expires_at}
        )
        changed = []
        if not share.active:
            share.active = True
            changed.append("active")
        if set_expiry and not created and share.expires_at != expires_at:
            share.expires_at = expires_at
            changed.append("expires_at")
        if changed:
            share.save(update_fields=[*changed, "updated_at"])
    return share


def set_active(session: Session, active: bool) -> SessionShare | None:
    """Turn the session's link on or off; None when it was never shared (and `active` is False)."""
    if active:
        return share_session(session)
    share = SessionShare.objects.filter(session=session).first()
    if share is not None and share.active:
        share.active = False
        share.save(update_fields=["active", "updated_at"])
    return share


def share_of(session: Session) -> SessionShare | None:
    return SessionShare.objects.filter(session=session).first()


def open_share(token: str) -> SessionShare:
    """The share a link's token names, its view counted. Unknown: SessionShare.DoesNotExist (404); turned off or
    expired: ShareClosed (410). The count rises in one UPDATE, so concurrent views all count."""
    share = SessionShare.objects.select_related("session", "session__workspace").get(token=token)
    if not share.active or share.expired:
        raise ShareClosed
    SessionShare.objects.filter(pk=share.pk).update(view_count=F("view_count") + 1)
    share.view_count += 1
    return share


def share_url(share: SessionShare, base: str = "") -> str:
    """The link: the share page's path, made absolute with `base` (the request's scheme and host)."""
    return base + reverse("share:session", args=[share.token])


def as_dict(share: SessionShare, base: str = "") -> dict[str, Any]:
    """A share as /api/v1 answers it."""
    return {
        "session_id": share.session.public_id,
        "url": share_url(share, base),
        "token": share.token,
        "active": share.active,
        "expires_at": rfc3339(share.expires_at) if share.expires_at else None,
        "view_count": share.view_count,
        "created_at": rfc3339(share.created_at),
    }
