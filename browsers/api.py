"""/api/v1/browsers: start a browser session a client drives over CDP, read it and its timeline, stop it."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictInt, StrictStr

from agent_platform.api import ERROR_RESPONSES, ApiRequest, ErrorOut, Instant, PathId

from . import services
from .models import BrowserEvent, BrowserSession

router = Router(tags=["browsers"])
BrowserPathId = Annotated[str, PathId("browser session", "brs", also=(r"^brs_[0-9a-f]{32}$",))]
EVENTS_MAX = 1000


class BrowserIn(Schema):
    model_config = ConfigDict(extra="forbid")

    profile_id: StrictStr | None = Field(None, description="A profile of the workspace the browser starts from.")
    save_profile: StrictBool | None = Field(
        None, description="Write the browser's final cookies back to the profile (default: true with a profile)."
    )
    proxy_id: StrictStr | None = Field(None, description="The workspace proxy the browser goes out through.")
    viewport_width: StrictInt | None = Field(None, description="The pages' width in CSS pixels.")
    viewport_height: StrictInt | None = Field(None, description="The pages' height in CSS pixels.")
    idle_timeout_seconds: StrictInt | None = Field(
        None, description="The session stops after this long without CDP traffic."
    )
    max_duration_seconds: StrictInt | None = Field(None, description="The session stops after this long in all.")
    record: StrictBool | None = Field(None, description="Keep a Playwright trace of the default context.")


class BrowserOut(Schema):
    id: str
    status: str
    stop_reason: str
    error: str
    cdp_url: str | None = Field(description="ws(s):// URL for connect_over_cdp; valid only while the session lives.")
    live_url: str
    viewport_width: int
    viewport_height: int
    idle_timeout_seconds: int
    max_duration_seconds: int
    record: bool
    profile_id: str | None
    save_profile: bool
    proxy_id: str | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    timeout_at: datetime
    browser_minutes: int
    browser_cost_usd: Decimal
    run_id: str | None = Field(description="The run a finished session became (POST /browsers/{id}/finish).")


class BrowserListOut(Schema):
    data: list[BrowserOut]


class BrowserEventOut(Schema):
    seq: int
    type: str
    data: dict[str, Any]
    at: datetime


class BrowserEventsOut(Schema):
    data: list[BrowserEventOut]


def browser_out(request: HttpRequest, session: BrowserSession) -> dict[str, Any]:
    return {
        "id": session.public_id,
        "status": session.status,
        "stop_reason": session.stop_reason,
        "error": session.error,
        "cdp_url": services.cdp_url(request, session),
        "live_url": services.live_url(request, session),
        "viewport_width": session.viewport_width,
        "viewport_height": session.viewport_height,
        "idle_timeout_seconds": session.idle_timeout_seconds,
        "max_duration_seconds": session.max_duration_seconds,
        "record": session.record,
        "profile_id": session.profile.public_id if session.profile else None,
        "save_profile": session.save_profile,
        "proxy_id": session.proxy.public_id if session.proxy else None,
        "created_at": session.created_at,
        "started_at": session.started_at,
        "ended_at": session.ended_at,
        "timeout_at": session.timeout_at(),
        "browser_minutes": session.browser_minutes(),
        "browser_cost_usd": session.cost_usd(),
        "run_id": session.run.public_id if session.run else None,
    }


@router.post("/browsers", response={201: BrowserOut, **ERROR_RESPONSES})
def create_browser(request: ApiRequest, body: BrowserIn) -> Status[dict[str, Any]]:
    """Start a browser session; connect to `cdp_url` once `status` is `running` (GET it until then)."""
    session = services.create_session(request.workspace, api_key=request.api_key, **body.dict())
    return Status(201, browser_out(request, session))


@router.get("/browsers", response={200: BrowserListOut, **ERROR_RESPONSES})
def list_browsers(request: ApiRequest) -> dict[str, Any]:
    """The workspace's browser sessions, newest first (the latest 100)."""
    sessions = BrowserSession.objects.for_workspace(request.workspace).select_related("profile", "proxy", "run")[:100]
    return {"data": [browser_out(request, session) for session in sessions]}


class BrowserUsageOut(Schema):
    sessions: int
    browser_minutes: int
    price_per_minute_usd: Decimal
    cost_usd: Decimal = Field(description="Every started minute of each session's life at the price per minute.")


@router.get("/browsers/usage", response={200: BrowserUsageOut, **ERROR_RESPONSES})
def browser_usage(
    request: ApiRequest, from_: Annotated[Instant | None, Query(alias="from")] = None, to: Instant | None = None
) -> dict[str, Any]:
    """Browser minutes of the workspace's sessions created in [from, to), priced by BROWSER_MINUTE_PRICE_USD."""
    return services.usage(request.workspace, from_, to)


@router.get("/browsers/{browser_id}", response={200: BrowserOut, **ERROR_RESPONSES})
def get_browser(request: ApiRequest, browser_id: BrowserPathId) -> dict[str, Any]:
    return browser_out(request, services.get_session(request.workspace, browser_id))


@router.post("/browsers/{browser_id}/stop", response={200: BrowserOut, **ERROR_RESPONSES})
def stop_browser(request: ApiRequest, browser_id: BrowserPathId) -> dict[str, Any]:
    """Stop the browser: its CDP connections close, its processes end; `status` says when it has."""
    session = services.request_stop(services.get_session(request.workspace, browser_id))
    return browser_out(request, session)


class FinishIn(Schema):
    model_config = ConfigDict(extra="forbid")

    task: StrictStr = Field(description="What your agent was asked to do.")
    output: StrictStr = Field(description="What your agent says it did: its claim, which the judge reads.")
    success: StrictBool | None = Field(None, description="Whether your agent says it succeeded (default true).")
    data: Any = Field(None, description="Structured data your agent returned, kept with the run.")
    judge: StrictBool | None = Field(None, description="Have Pilothouse's judge read the session (default false).")
    judge_context: list[StrictStr] | None = Field(None, description="Facts the judge takes as true, as for runs.")


@router.post("/browsers/{browser_id}/finish", response={200: BrowserOut, 409: ErrorOut, **ERROR_RESPONSES})
def finish_browser(request: ApiRequest, browser_id: BrowserPathId, body: FinishIn) -> dict[str, Any]:
    """End the session with your agent's own claim: once the browser has stopped it becomes a finished run (`run_id`)
    whose steps are the session's timeline and whose final view is the browser's last page, judged with `judge`."""
    session = services.finish(services.get_session(request.workspace, browser_id), **body.dict())
    return browser_out(request, session)


@router.get("/browsers/{browser_id}/events", response={200: BrowserEventsOut, **ERROR_RESPONSES})
def browser_events(request: ApiRequest, browser_id: BrowserPathId, after: int = 0) -> dict[str, Any]:
    """The session's timeline read from CDP: targets, navigations, downloads, refusals, its start and end."""
    session = services.get_session(request.workspace, browser_id)
    rows: list[BrowserEvent] = list(session.events.filter(seq__gt=after).order_by("seq")[:EVENTS_MAX])
    return {"data": [{"seq": e.seq, "type": e.type, "data": e.payload, "at": e.at} for e in rows]}
