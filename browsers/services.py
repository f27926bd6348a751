"""Browser sessions' state changes: create (validated, enqueued on commit), stop, the worker's start and end, and the
timeline's lines, and the addresses a client is given for a session. Views, the API, v4 and the worker call these."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Collection, Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.db import transaction
from django.db.models import Max
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from agent_platform.errors import Conflict, InvalidRequest, NotFound
from agent_platform.meters import Meter, MeterRow
from agent_platform.models import ApiKey, Workspace
from judge.services import clean_judge_context
from runs import event_types
from runs.launch_rules import clean_proxy_id, named_in_workspace
from runs.profiles.models import Profile

from . import external
from .models import PUBLIC_PREFIX, BrowserEvent, BrowserSession
from .tasks import run_session

log = logging.getLogger(__name__)

VIEWPORT_RANGE = (200, 4096)
FINAL_TEXT_CHARS = 50_000
CLAIM_TEXT_CHARS = 20_000
ENDED = (BrowserSession.Status.STOPPED, BrowserSession.Status.FAILED)


def cdp_url(request: HttpRequest, session: BrowserSession) -> str | None:
    """The ws(s):// address a client connects to over CDP (browsers.routing), through the web that served `request`;
    None once the session no longer lives."""
    if not session.is_live:
        return None
    base = request.build_absolute_uri("/")
    scheme = "wss" if base.startswith("https") else "ws"
    return f"{scheme}://{base.split('://', 1)[1].rstrip('/')}/browsers/{session.public_id}/cdp/{session.token()}"


def live_url(request: HttpRequest, session: BrowserSession) -> str:
    """The session's page, where people watch and take control."""
    return request.build_absolute_uri(reverse("browsers:detail", args=[session.public_id]))


def invalid(field: str, message: str) -> InvalidRequest:
    return InvalidRequest.of_field(field, message)


def whole_number(field: str, value: object, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(field, "must be a whole number")
    if not low <= value <= high:
        raise invalid(field, f"must be between {low} and {high}")
    return value


def flag(field: str, value: object, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(field, "must be true or false")
    return value


def create_session(
    workspace: Workspace,
    *,
    created_by: AbstractBaseUser | AnonymousUser | None = None,
    api_key: ApiKey | None = None,
    profile_id: object = None,
    save_profile: object = None,
    proxy_id: object = None,
    viewport_width: object = None,
    viewport_height: object = None,
    idle_timeout_seconds: object = None,
    max_duration_seconds: object = None,
    record: object = None,
    metadata: dict[str, str] | None = None,
) -> BrowserSession:
    """A session queued for a worker; its browser starts there (BrowserSession.Status tells how far)."""
    profile = named_in_workspace(
        Profile.objects.for_workspace(workspace), "profile_id", profile_id, "profile", "GET /api/v1/profiles"
    )
    keep = flag("save_profile", save_profile, profile is not None)
    if keep and profile is None:
        raise invalid("save_profile", "needs a profile_id to save the browser's state to")
    max_seconds = settings.BROWSER_SESSION_MAX_SECONDS
    session = BrowserSession(
        workspace=workspace,
        created_by=created_by if isinstance(created_by, User) else None,
        api_key=api_key,
        profile=profile,
        save_profile=keep,
        proxy=clean_proxy_id(workspace, proxy_id),
        viewport_width=whole_number("viewport_width", viewport_width, settings.BROWSER_VIEWPORT_WIDTH, *VIEWPORT_RANGE),
        viewport_height=whole_number(
            "viewport_height", viewport_height, settings.BROWSER_VIEWPORT_HEIGHT, *VIEWPORT_RANGE
        ),
        idle_timeout_seconds=whole_number(
            "idle_timeout_seconds",
            idle_timeout_seconds,
            min(settings.BROWSER_SESSION_IDLE_TIMEOUT_SECONDS, max_seconds),
            5,
            max_seconds,
        ),
        max_duration_seconds=whole_number("max_duration_seconds", max_duration_seconds, max_seconds, 10, max_seconds),
        record=flag("record", record, False),
        metadata=metadata or {},
    )
    with transaction.atomic():
        session.save()
        transaction.on_commit(lambda: run_session.apply_async(args=[session.pk]))
    return session


def get_session(workspace: Workspace, public_id: str) -> BrowserSession:
    """The workspace's session by its public id (brs_… or the bare UUID v4 uses); another workspace's is not found."""
    raw = public_id.removeprefix(PUBLIC_PREFIX).replace("-", "").lower()
    found = None
    if len(raw) == 32 and all(c in "0123456789abcdef" for c in raw):
        found = BrowserSession.objects.for_workspace(workspace).filter(uuid=raw).first()
    if found is None:
        raise NotFound(f"No browser session '{public_id[:60]}' in this workspace.")
    return found


def request_stop(session: BrowserSession) -> BrowserSession:
    """Ask the worker to stop the browser (it looks every second); a session no worker took yet ends here."""
    with transaction.atomic():
        locked = BrowserSession.objects.select_for_update().get(pk=session.pk)
        if locked.status == BrowserSession.Status.QUEUED:
            end(locked, BrowserSession.StopReason.REQUESTED)
        elif locked.status in (BrowserSession.Status.STARTING, BrowserSession.Status.RUNNING):
            locked.status = BrowserSession.Status.STOPPING
            locked.stop_reason = BrowserSession.StopReason.REQUESTED
            locked.save(update_fields=["status", "stop_reason"])
    session.refresh_from_db()
    return session


def stop_requested(session_pk: int) -> str:
    """Why the session was asked to stop (requested, or finished with a claim), or "" while it was not."""
    reason = (
        BrowserSession.objects.filter(pk=session_pk, status__in=(BrowserSession.Status.STOPPING, *ENDED))
        .values_list("stop_reason", flat=True)
        .first()
    )
    return "" if reason is None else reason or BrowserSession.StopReason.REQUESTED


def record(session: BrowserSession | int, type: str, payload: dict[str, Any] | None = None) -> BrowserEvent:
    """One timeline line, numbered after the last (the session's row is locked while it is numbered); a type the
    registry does not declare for browser sessions (runs.event_types) is refused with ValueError."""
    event_types.check(type, event_types.Record.BROWSER)
    pk = session if isinstance(session, int) else session.pk
    with transaction.atomic():
        BrowserSession.objects.select_for_update().filter(pk=pk).values_list("pk").first()
        last = BrowserEvent.objects.filter(session_id=pk).aggregate(last=Max("seq"))["last"] or 0
        return BrowserEvent.objects.create(session_id=pk, seq=last + 1, type=type, payload=payload or {})


def claim(session_pk: int, worker: str) -> BrowserSession | None:
    """The worker takes a queued session; None when it was stopped (or taken) meanwhile."""
    with transaction.atomic():
        session = BrowserSession.objects.select_for_update().filter(pk=session_pk).first()
        if session is None or session.status != BrowserSession.Status.QUEUED:
            return None
        session.status = BrowserSession.Status.STARTING
        session.worker = worker
        session.heartbeat_at = timezone.now()
        session.save(update_fields=["status", "worker", "heartbeat_at"])
    return session


def mark_running(session: BrowserSession, relay_address: str, download_dir: str) -> bool:
    """The browser is up and the relay listens: clients may connect. False when a stop came meanwhile."""
    now = timezone.now()
    updated = BrowserSession.objects.filter(pk=session.pk, status=BrowserSession.Status.STARTING).update(
        status=BrowserSession.Status.RUNNING,
        relay_address=relay_address,
        download_dir=download_dir,
        started_at=now,
        last_activity_at=now,
    )
    session.refresh_from_db()
    if updated:
        record(
            session, event_types.BROWSER_STARTED.name, {"viewport": [session.viewport_width, session.viewport_height]}
        )
    return bool(updated)


def touch(session_pk: int) -> None:
    BrowserSession.objects.filter(pk=session_pk).update(last_activity_at=timezone.now())


def end(session: BrowserSession, reason: str, error: str = "") -> None:
    """The session is over: its token opens nothing any more, its minutes are counted up to now. A session finished
    with a claim becomes its run first, so whoever sees it stopped sees its run_id too."""
    session.refresh_from_db()
    if session.claim and session.run_id is None:
        try:
            external.run_of_claim(session)
        except Exception:
            log.exception("browser session %s: its claim could not become a run", session.public_id)
    failed = reason in (
        BrowserSession.StopReason.START_FAILED,
        BrowserSession.StopReason.BROWSER_EXITED,
        BrowserSession.StopReason.WORKER_LOST,
    )
    now = timezone.now()
    # once: a worker that comes back after the reaper ended its session does not end it again
    ended = (
        BrowserSession.objects.filter(pk=session.pk)
        .exclude(status__in=ENDED)
        .update(
            status=BrowserSession.Status.FAILED if failed else BrowserSession.Status.STOPPED,
            stop_reason=reason,
            error=error[:2000],
            relay_address="",
            ended_at=now,
        )
    )
    session.refresh_from_db()
    if ended:
        record(session, event_types.BROWSER_ENDED.name, {"reason": reason, **({"error": error[:500]} if error else {})})


def remove_download_dir(path: str) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


def keep_final_page(session_pk: int, screenshot: str, url: str, title: str, text: str) -> None:
    """The page the browser ended on: what the console shows and the judge reads."""
    BrowserSession.objects.filter(pk=session_pk).update(
        final_screenshot=screenshot, final_url=url[:2000], final_title=title[:300], final_text=text[:FINAL_TEXT_CHARS]
    )


def save_profile_state(session: BrowserSession, state: dict[str, Any]) -> None:
    """The browser's final state back to its profile, sealed, in one UPDATE (as a run's write-back)."""
    now = timezone.now()
    if session.profile_id is None:
        return
    written = Profile.objects.filter(pk=session.profile_id).update(
        **Profile.sealed_fields(state), updated_at=now, last_used_at=now
    )
    if written and session.profile is not None:
        record(session, event_types.BROWSER_PROFILE_SAVED.name, {"profile_id": session.profile.public_id})


def sessions_begun(workspace: Workspace | None, start: datetime | None, end: datetime | None) -> Any:
    """The sessions created in [start, end) that a browser ran for (of one workspace, or of all): what is billed."""
    sessions = BrowserSession.objects.filter(started_at__isnull=False)
    if workspace is not None:
        sessions = sessions.filter(workspace=workspace)
    if start is not None:
        sessions = sessions.filter(created_at__gte=start)
    if end is not None:
        sessions = sessions.filter(created_at__lt=end)
    return sessions.order_by().only("workspace_id", "created_at", "started_at", "ended_at", "minute_price_usd")


def meter_rows(workspace: Workspace | None, start: datetime | None, end: datetime | None) -> Iterator[MeterRow]:
    """Each session's browser minutes for the usage page, the usage API and billing (agent_platform.meters), billed
    on the day it was created; a live session's minutes so far."""
    for session in sessions_begun(workspace, start, end).iterator():
        yield MeterRow(
            workspace_id=session.workspace_id,
            day=timezone.localdate(session.created_at),
            quantity=session.browser_minutes(),
            cost_usd=session.cost_usd(),
        )


BROWSER_MINUTES = Meter(
    name="browser_minutes", label="Browser minutes", unit="minute", counted="session", rows=meter_rows
)


def usage(workspace: Workspace, start: datetime | None = None, end: datetime | None = None) -> dict[str, Any]:
    """The browser minutes of the workspace's sessions created in [start, end), and what they cost."""
    rows = list(meter_rows(workspace, start, end))
    return {
        "sessions": len(rows),
        "browser_minutes": sum(row.quantity for row in rows),
        "price_per_minute_usd": settings.BROWSER_MINUTE_PRICE_USD,
        "cost_usd": sum((row.cost_usd for row in rows), Decimal(0)),
    }


# --- the worker's heartbeat, and sessions whose worker was lost ------------------------------------------------

WORKER_LOST_MESSAGE = "The worker running this browser was lost"


def heartbeats(session_pks: Collection[int]) -> None:
    """The worker still holds these sessions' browsers (its one heartbeat writer, in one UPDATE)."""
    if session_pks:
        BrowserSession.objects.on_a_worker().filter(pk__in=list(session_pks)).update(heartbeat_at=timezone.now())


def reap_lost_sessions(stale_after: timedelta | None = None) -> list[str]:
    """Sessions whose worker stopped beating end failed, `worker_lost`, with a reason that says so: a browser is
    never resumed elsewhere, since its pages and the client's CDP connections died with the worker."""
    stale_after = timedelta(seconds=settings.RUN_STALE_AFTER_SECONDS) if stale_after is None else stale_after
    cutoff = timezone.now() - stale_after
    reaped = []
    for session in BrowserSession.objects.on_a_worker().filter(heartbeat_at__lt=cutoff):
        with transaction.atomic():
            locked = BrowserSession.objects.select_for_update().filter(pk=session.pk, heartbeat_at__lt=cutoff).first()
            if locked is None or locked.status not in BrowserSession.ON_A_WORKER:
                continue
            worker = locked.worker or "unknown"
            end(locked, BrowserSession.StopReason.WORKER_LOST, f"{WORKER_LOST_MESSAGE} ({worker} stopped responding).")
        log.warning("browser session %s failed: worker %s lost", session.public_id, worker)
        reaped.append(session.public_id)
    return reaped


def finish(
    session: BrowserSession,
    *,
    task: object,
    output: object,
    success: object = None,
    data: object = None,
    judge: object = None,
    judge_context: object = None,
) -> BrowserSession:
    """End a running session with the client's own claim of what its agent did; it becomes a finished run whose
    steps are the session's timeline, judged like any run when `judge` is true (browsers.external)."""
    if not isinstance(task, str) or not task.strip():
        raise invalid("task", "must be a non-empty string: what the agent was asked to do")
    if not isinstance(output, str):
        raise invalid("output", "must be a string: what the agent says it did")
    if len(task) > CLAIM_TEXT_CHARS or len(output) > CLAIM_TEXT_CHARS:
        raise invalid(
            "output" if len(output) > CLAIM_TEXT_CHARS else "task", f"is longer than {CLAIM_TEXT_CHARS} characters"
        )
    claim: dict[str, Any] = {
        "task": task.strip(),
        "output": output,
        "success": flag("success", success, True),
        "data": data,
        "judge": flag("judge", judge, False),
        "judge_context": clean_judge_context(judge_context) if judge_context is not None else [],
    }
    with transaction.atomic():
        locked = BrowserSession.objects.select_for_update().get(pk=session.pk)
        if locked.status not in (BrowserSession.Status.STARTING, BrowserSession.Status.RUNNING) or locked.claim:
            raise Conflict(
                f"Browser session {locked.public_id} is {locked.status}: only a running session can be finished, once."
            )
        locked.claim = claim
        locked.status = BrowserSession.Status.STOPPING
        locked.stop_reason = BrowserSession.StopReason.FINISHED
        locked.save(update_fields=["claim", "status", "stop_reason"])
    record(session, event_types.BROWSER_FINISHED.name, {"task": claim["task"][:500], "success": claim["success"]})
    session.refresh_from_db()
    return session
