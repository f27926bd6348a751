"""v4's session queue, share link and purge on Pilothouse's services: a queued message is a message to the running
agent (runs.human), or, on a session with no run going, its follow-up run; the share is runs.shares'; the purge
runs.purge's (content gone, usage and cost kept)."""

import uuid
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictStr

from agent_platform.api import ApiRequest
from agent_platform.errors import InvalidRequest, NotFound
from runs import human, purge, shares
from runs.human import TEXT_MAX_CHARS
from runs.launch import launch
from runs.launch_rules import LaunchRequest
from runs.models import Run, RunMessage, Session, SessionShare

from . import mapping
from .api import ERRORS, lookup
from .unsupported import NotInPilothouse

router = Router(tags=["sessions"])

DEDUPLICATE_HEADER = "X-V4-Queue-Deduplicate"
DEDUPLICATE_MODES = ("exact-text-v1",)
SENDER = "v4"


def session_of(request: ApiRequest, session_id: str) -> Session:
    found: Session = lookup(Session.objects.for_workspace(request.workspace), session_id, "Session")
    return found


# --- the queue -------------------------------------------------------------------------------------------------------


class QueueMessageIn(Schema):
    model_config = ConfigDict(extra="forbid")
    text: StrictStr = Field(..., min_length=1, max_length=TEXT_MAX_CHARS)
    interrupt: StrictBool | None = False
    attachedFileIds: list[StrictStr] | None = None


class QueuedMessageOut(Schema):
    id: int
    sessionId: uuid.UUID
    runId: uuid.UUID | None
    mode: str
    status: str
    text: str
    attachedFileIds: list[uuid.UUID] | None
    createdAt: Any


class QueueListOut(Schema):
    queue: list[QueuedMessageOut]
    steeringCutoffs: list[Any] | None


def message_out(session: Session, message: RunMessage, status: str | None = None) -> dict[str, Any]:
    return {
        "id": message.pk,
        "sessionId": session.uuid,
        "runId": message.run.uuid,
        "mode": "queue",
        "status": status or ("consumed" if message.delivered_at else "pending"),
        "text": message.text,
        "attachedFileIds": None,
        "createdAt": message.queued_at,
    }


def messages_of(session: Session) -> QuerySet[RunMessage]:
    return RunMessage.objects.filter(run__session=session, kind=RunMessage.Kind.STEER).select_related("run")


@router.post("/sessions/{session_id}/queue", response={200: QueuedMessageOut, **ERRORS}, summary="Send a message")
def send_message(request: ApiRequest, session_id: str, body: QueueMessageIn) -> dict[str, Any]:
    """A run going in the session (queued or running) receives the text with its next model request (status pending,
    then consumed). A session with none going continues with a follow-up run whose task is the text, on the latest
    run's model (status consumed, runId the new run's)."""
    session = session_of(request, session_id)
    if body.interrupt:
        raise NotInPilothouse("interrupting a run with a message (interrupt); cancel the run, then send it")
    if body.attachedFileIds:
        raise NotInPilothouse("files on a queued message (attachedFileIds); give files to a run at its launch")
    dedupe = request.headers.get(DEDUPLICATE_HEADER)
    if dedupe is not None and dedupe not in DEDUPLICATE_MODES:
        raise InvalidRequest(f"{DEDUPLICATE_HEADER} takes {', '.join(DEDUPLICATE_MODES)}, not {dedupe[:40]!r}.")
    going = session.runs.active().filter(kind=Run.Kind.AGENT).order_by("-created_at", "-id").first()
    if going is not None:
        if dedupe is not None:
            same = messages_of(session).filter(run=going, delivered_at__isnull=True, text=body.text).first()
            if same is not None:
                return message_out(session, same)
        return message_out(session, human.queue_message(going, body.text, by=SENDER))
    latest = session.runs.order_by("-created_at", "-id").first()
    try:
        launched = launch(
            request.workspace,
            LaunchRequest(
                task=body.text,
                session_id=session.public_id,
                model=latest.model if latest is not None and latest.model else None,
            ),
        )
    except InvalidRequest as error:
        raise mapping.v4_refusal(error) from None
    run = launched.run
    return {
        "id": 0,
        "sessionId": session.uuid,
        "runId": run.uuid,
        "mode": "queue",
        "status": "consumed",
        "text": body.text,
        "attachedFileIds": None,
        "createdAt": run.created_at,
    }


@router.get("/sessions/{session_id}/queue", response={200: QueueListOut, **ERRORS}, summary="Pending messages")
def list_queue(request: ApiRequest, session_id: str) -> dict[str, Any]:
    session = session_of(request, session_id)
    pending = messages_of(session).filter(delivered_at__isnull=True).order_by("queued_at", "id")
    return {"queue": [message_out(session, message) for message in pending], "steeringCutoffs": None}


def message_of(session: Session, message_id: int) -> RunMessage:
    found = messages_of(session).filter(pk=message_id).first()
    if found is None:
        raise NotFound(f"Message {message_id} not found in this session")
    return found


@router.get(
    "/sessions/{session_id}/queue/{message_id}", response={200: QueuedMessageOut, **ERRORS}, summary="A message"
)
def get_message(request: ApiRequest, session_id: str, message_id: int) -> dict[str, Any]:
    session = session_of(request, session_id)
    return message_out(session, message_of(session, message_id))


@router.delete(
    "/sessions/{session_id}/queue/{message_id}", response={200: QueuedMessageOut, **ERRORS}, summary="Withdraw"
)
def remove_message(request: ApiRequest, session_id: str, message_id: int) -> dict[str, Any]:
    """A message the agent has not received yet is withdrawn (status cancelled); one it received is 409."""
    session = session_of(request, session_id)
    message = message_of(session, message_id)
    human.withdraw_message(message, by=SENDER)
    return message_out(session, message, status="cancelled")


# --- the share link --------------------------------------------------------------------------------------------------


class ShareInfoOut(Schema):
    id: uuid.UUID
    shareToken: str
    sessionId: uuid.UUID
    isActive: bool
    viewCount: int
    createdAt: Any
    shareUrl: str


class ShareUpdateIn(Schema):
    model_config = ConfigDict(extra="forbid")
    isActive: StrictBool


def base_url(request: HttpRequest) -> str:
    return request.build_absolute_uri("/").rstrip("/")


def share_info(request: HttpRequest, share: SessionShare) -> dict[str, Any]:
    return {
        "id": share.uuid,
        "shareToken": share.token,
        "sessionId": share.session.uuid,
        "isActive": share.active and not share.expired,
        "viewCount": share.view_count,
        "createdAt": share.created_at,
        "shareUrl": shares.share_url(share, base_url(request)),
    }


@router.get("/sessions/{session_id}/share", response={200: ShareInfoOut | None, **ERRORS}, summary="Share link")
def get_share(request: ApiRequest, session_id: str) -> Any:
    """The session's share link, or null when it was never shared."""
    share = shares.share_of(session_of(request, session_id))
    if share is None:
        return HttpResponse(b"null", content_type="application/json")
    return share_info(request, share)


@router.post("/sessions/{session_id}/share", response={200: ShareInfoOut, **ERRORS}, summary="Share")
def create_share(request: ApiRequest, session_id: str) -> dict[str, Any]:
    """Turns the link on: anyone holding shareUrl sees the session read-only, signed out. Its token is kept."""
    return share_info(request, shares.share_session(session_of(request, session_id)))


@router.put("/sessions/{session_id}/share", response={200: ShareInfoOut, **ERRORS}, summary="Turn on or off")
def update_share(request: ApiRequest, session_id: str, body: ShareUpdateIn) -> dict[str, Any]:
    """isActive false: the link answers 410 from now on; true: the same link works again."""
    share = shares.set_active(session_of(request, session_id), body.isActive)
    if share is None:
        raise NotFound("This session was never shared")
    return share_info(request, share)


# --- purge -----------------------------------------------------------------------------------------------------------


@router.post("/sessions/{session_id}/purge", response={204: None, **ERRORS}, summary="Purge its content")
def purge_session(request: ApiRequest, session_id: str) -> Status[None]:
    """Removes its runs' content (events, screenshots, traces, files, task, output) and its share link; the runs stay
    with their status, usage and cost, so the bill is unchanged. 409 while a run of it is going."""
    purge.purge_session(session_of(request, session_id))
    return Status(204, None)
