"""/api/v1 for a session's share link and its purge: the same services as the session page and v4 (runs.shares,
runs.purge)."""

from typing import Any

from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict, StrictInt

from agent_platform.api import ERROR_RESPONSES, ApiRequest, ErrorOut
from agent_platform.errors import NotFound
from agent_platform.lookup import find

from . import purge, shares
from .api import SessionPathId
from .models import Session

router = Router(tags=["sessions"])


class ShareIn(Schema):
    model_config = ConfigDict(extra="forbid")
    expires_in_seconds: StrictInt | None = Field(
        None, description="The link stops working this many seconds from now (60 to a year); null: never."
    )


class ShareOut(Schema):
    session_id: str
    url: str
    token: str
    active: bool
    expires_at: str | None
    view_count: int
    created_at: str


class PurgeOut(Schema):
    session_id: str
    purged_runs: list[str]


def session_of(request: ApiRequest, session_id: str) -> Session:
    return find(Session.objects.for_workspace(request.workspace), session_id, "session")


def base(request: ApiRequest) -> str:
    return request.build_absolute_uri("/").rstrip("/")


@router.post(
    "/sessions/{session_id}/share",
    response={200: ShareOut, **ERROR_RESPONSES},
    summary="Share a session read-only",
    description="Turns on the session's link (made on first use; its token is kept when it is turned off and on). "
    "Anyone holding `url` sees the session's runs read-only, signed out: task, timeline, screenshots, verdict, data "
    "and judgment, secrets masked; no live view, messages or trace. `view_count` counts its openings. An empty body "
    "keeps the expiry; `expires_in_seconds` sets it (null: never).",
)
def share_session(request: ApiRequest, session_id: SessionPathId, payload: ShareIn | None = None) -> dict[str, Any]:
    session = session_of(request, session_id)
    if payload is not None and "expires_in_seconds" in payload.model_fields_set:
        expires_at = shares.clean_expires_in(payload.expires_in_seconds)
        share = shares.share_session(session, expires_at=expires_at, set_expiry=True)
    else:
        share = shares.share_session(session)
    return shares.as_dict(share, base(request))


@router.get("/sessions/{session_id}/share", response={200: ShareOut, **ERROR_RESPONSES}, summary="A session's link")
def get_share(request: ApiRequest, session_id: SessionPathId) -> dict[str, Any]:
    share = shares.share_of(session_of(request, session_id))
    if share is None:
        raise NotFound("This session was never shared.")
    return shares.as_dict(share, base(request))


@router.delete(
    "/sessions/{session_id}/share",
    response={200: ShareOut, **ERROR_RESPONSES},
    summary="Turn a session's link off",
    description="The link answers 410 Gone from now on; POST …/share turns the same link on again.",
)
def unshare_session(request: ApiRequest, session_id: SessionPathId) -> dict[str, Any]:
    share = shares.set_active(session_of(request, session_id), False)
    if share is None:
        raise NotFound("This session was never shared.")
    return shares.as_dict(share, base(request))


@router.post(
    "/sessions/{session_id}/purge",
    response={200: PurgeOut, 409: ErrorOut, **ERROR_RESPONSES},
    summary="Purge a session's content now",
    description="Deletes what its runs produced (events, screenshots and live-view images, traces, downloaded files, "
    "checkpoints, questions and messages, task, output, data, the judge's reasons) and its share link, in the "
    "database and in storage. The runs stay with their status, usage and cost, and their model requests stay: "
    "usage, the admin and invoices add up as before. 409 while one of its runs is going.",
)
def purge_session(request: ApiRequest, session_id: SessionPathId) -> Status[dict[str, Any]]:
    session = session_of(request, session_id)
    return Status(200, {"session_id": session.public_id, "purged_runs": purge.purge_session(session)})
