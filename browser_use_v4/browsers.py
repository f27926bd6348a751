"""v4's /browsers over Pilothouse's browser sessions (browsers.services): create waits for the browser, as Browser
Use's does, so its `cdpUrl` opens at once; stop waits for the worker to have ended it."""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictInt, StrictStr

from agent_platform.api import ApiRequest
from agent_platform.errors import InvalidRequest
from agent_platform.lib.money import exact_usd
from browsers import services
from browsers.models import BrowserSession
from runs.profiles.models import Profile

from .api import ERRORS
from .unsupported import NotInPilothouse

router = Router(tags=["browsers"])

# How long create waits for the worker's browser, and stop for its end, before answering what is so far.
READY_WAIT_SECONDS = 60.0
STOP_WAIT_SECONDS = 30.0
PAGE_MAX = 100


class BrowserCreateIn(Schema):
    """v4's CreateBrowserSessionRequest; what Pilothouse lacks is refused naming the feature."""

    model_config = ConfigDict(extra="forbid")
    profileId: uuid.UUID | None = None
    proxyCountryCode: StrictStr | None = None
    metadata: dict[str, StrictStr] | None = Field(None, max_length=10)
    timeout: StrictInt | None = Field(None, ge=1, le=240)
    browserScreenWidth: StrictInt | None = Field(None, ge=320, le=6144)
    browserScreenHeight: StrictInt | None = Field(None, ge=320, le=3456)
    allowResizing: StrictBool | None = None
    pdfRendererEnabled: StrictBool | None = None
    solveCaptchas: StrictBool | None = None
    customProxy: dict[str, Any] | None = None
    enableRecording: StrictBool | None = None
    extensionIds: list[StrictStr] | None = None


class BrowserUpdateIn(Schema):
    model_config = ConfigDict(extra="forbid")
    action: Literal["stop"]


class BrowserOut(Schema):
    id: uuid.UUID
    status: Literal["active", "stopped"]
    liveUrl: str | None
    cdpUrl: str | None
    timeoutAt: Any
    startedAt: Any
    finishedAt: Any
    proxyUsedMb: str
    proxyCost: str
    browserCost: str
    agentSessionId: uuid.UUID | None
    recordingUrl: str | None
    recordingAvailable: bool
    metadata: dict[str, str]
    extensions: list[dict[str, Any]]


class BrowserListOut(Schema):
    items: list[BrowserOut]
    totalItems: int
    pageNumber: int
    pageSize: int


class BrowserFilters(Schema):
    pageSize: int = Field(10, ge=1, le=PAGE_MAX)
    pageNumber: int = Field(1, ge=1)
    filterBy: Literal["active", "stopped"] | None = None


def browser_out(request: HttpRequest, session: BrowserSession, *, listed: bool = False) -> dict[str, Any]:
    recording = None
    if not listed and session.trace_name:
        recording = request.build_absolute_uri(f"/browsers/{session.public_id}/trace.zip")
    return {
        "id": session.uuid,
        "status": "active" if session.is_live else "stopped",
        "liveUrl": services.live_url(request, session),
        "cdpUrl": services.cdp_url(request, session),
        "timeoutAt": session.timeout_at(),
        "startedAt": session.started_at or session.created_at,
        "finishedAt": session.ended_at,
        "proxyUsedMb": "0",
        "proxyCost": "0",
        "browserCost": exact_usd(session.cost_usd()),
        "agentSessionId": None,
        "recordingUrl": recording,
        "recordingAvailable": session.record and (session.is_live or bool(session.trace_name)),
        "metadata": session.metadata or {},
        "extensions": [],
    }


def profile_public_id(request: ApiRequest, profile_uuid: uuid.UUID | None) -> str | None:
    if profile_uuid is None:
        return None
    profile = Profile.objects.for_workspace(request.workspace).filter(uuid=profile_uuid).first()
    if profile is None:
        raise InvalidRequest.of_field("profileId", f"no profile {profile_uuid} in this workspace")
    return profile.public_id


def wait(session: BrowserSession, until: tuple[str, ...], seconds: float) -> BrowserSession:
    deadline = time.monotonic() + seconds
    session.refresh_from_db()
    while session.status not in until and time.monotonic() < deadline:
        time.sleep(0.1)
        session.refresh_from_db()
    return session


@router.post("/browsers", response={201: BrowserOut, **ERRORS}, summary="Create a browser session")
def create_browser(request: ApiRequest, body: BrowserCreateIn) -> Status[dict[str, Any]]:
    if body.proxyCountryCode:
        raise NotInPilothouse("proxies by country (proxyCountryCode); use a workspace proxy through /api/v1")
    if body.customProxy:
        raise NotInPilothouse("a proxy per browser (customProxy); use a workspace proxy through /api/v1")
    if body.extensionIds:
        raise NotInPilothouse("browser extensions (extensionIds)")
    minutes = body.timeout
    session = services.create_session(
        request.workspace,
        api_key=request.api_key,
        profile_id=profile_public_id(request, body.profileId),
        viewport_width=body.browserScreenWidth,
        viewport_height=body.browserScreenHeight,
        max_duration_seconds=None if minutes is None else min(minutes * 60, settings.BROWSER_SESSION_MAX_SECONDS),
        record=body.enableRecording,
        metadata=body.metadata,
    )
    session = wait(session, (BrowserSession.Status.RUNNING, *services.ENDED), READY_WAIT_SECONDS)
    return Status(201, browser_out(request, session))


@router.get("/browsers", response={200: BrowserListOut, **ERRORS}, summary="List browser sessions, newest first")
def list_browsers(request: ApiRequest, filters: Query[BrowserFilters]) -> dict[str, Any]:
    sessions = BrowserSession.objects.for_workspace(request.workspace)
    if filters.filterBy == "active":
        sessions = sessions.live()
    elif filters.filterBy == "stopped":
        sessions = sessions.exclude(status__in=BrowserSession.LIVE)
    start = (filters.pageNumber - 1) * filters.pageSize
    page = sessions[start : start + filters.pageSize]
    return {
        "items": [browser_out(request, session, listed=True) for session in page],
        "totalItems": sessions.count(),
        "pageNumber": filters.pageNumber,
        "pageSize": filters.pageSize,
    }


@router.get("/browsers/{session_id}", response={200: BrowserOut, **ERRORS}, summary="A browser session")
def get_browser(request: ApiRequest, session_id: str) -> dict[str, Any]:
    return browser_out(request, services.get_session(request.workspace, session_id))


@router.patch("/browsers/{session_id}", response={200: BrowserOut, **ERRORS}, summary="Stop a browser session")
def update_browser(request: ApiRequest, session_id: str, body: BrowserUpdateIn) -> dict[str, Any]:
    session = services.request_stop(services.get_session(request.workspace, session_id))
    return browser_out(request, wait(session, services.ENDED, STOP_WAIT_SECONDS))
