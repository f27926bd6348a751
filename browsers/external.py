"""A finished browser session as a run: the client's claim is the run's verdict, the session's timeline its steps and
the browser's last page its final view, so the judge reads it unchanged (judge) and writes run.judged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from judge.services import judge_on_finish
from runs import event_types
from runs.events import emit
from runs.models import Run, Session
from runs.screenshots import save_screenshot

from . import storage

if TYPE_CHECKING:
    from .models import BrowserSession

# The model a run of an outside agent names: no model request of Pilothouse's was made for it.
EXTERNAL_MODEL = "external"


def steps(session: BrowserSession) -> list[tuple[str, dict[str, Any]]]:
    """The timeline as the judge reads a run's steps: each target, navigation and download a tool use, each refusal
    of the guard a tool error."""
    found: list[tuple[str, dict[str, Any]]] = []
    for event in session.events.order_by("seq"):
        data = event.payload or {}
        if event.type == event_types.BROWSER_TARGET_CREATED.name:
            found.append(("agent.tool_use", {"name": "open_tab", "input": {"url": data.get("url", "")}}))
        elif event.type == event_types.BROWSER_NAVIGATED.name:
            found.append(("agent.tool_use", {"name": "navigate", "input": {"url": data.get("url", "")}}))
            if data.get("title"):
                found.append(("agent.tool_result", {"content": f"Title: {data['title']}"}))
        elif event.type == event_types.BROWSER_DOWNLOAD.name:
            found.append(("agent.tool_use", {"name": "download", "input": {"name": data.get("name", "")}}))
        elif event.type in (event_types.BROWSER_REFUSED.name, event_types.BROWSER_CDP_REFUSED.name):
            found.append(
                (
                    "agent.tool_result",
                    {"content": f"refused: {data.get('reason', '')} {data.get('url', '')}".strip(), "is_error": True},
                )
            )
    return found


def run_of_claim(session: BrowserSession) -> Run:
    """The finished run of the session's claim; judged after commit when the claim asked for it."""
    claim = session.claim
    now = timezone.now()
    with transaction.atomic():
        run_session = Session.objects.create(workspace=session.workspace, title=f"Browser session {session.public_id}")
        run = Run.objects.create(
            workspace=session.workspace,
            session=run_session,
            created_by=session.created_by,
            task=claim["task"],
            model=EXTERNAL_MODEL,
            judge=claim["judge"],
            judge_context=claim["judge_context"],
            viewport_width=session.viewport_width,
            viewport_height=session.viewport_height,
            metadata={"browser_session": session.public_id},
            status=Run.Status.SUCCEEDED if claim["success"] else Run.Status.FAILED,
            success=claim["success"],
            output=claim["output"],
            data=claim["data"],
            error_code="" if claim["success"] else Run.ErrorCode.TASK_FAILED,
            created_at=session.created_at,
            admitted_at=session.created_at,
            started_at=session.started_at,
            finished_at=now,
        )
        type(session).objects.filter(pk=session.pk).update(run=run)
        for type_, data in steps(session):
            emit(run, type_, data)
        view: dict[str, Any] = {"url": session.final_url, "title": session.final_title, "text": session.final_text}
        if session.final_screenshot:
            with default_storage.open(storage.screenshot_path(session, session.final_screenshot)) as image:
                view["screenshot_url"] = save_screenshot(run.public_id, image.read())
        emit(run, "agent.final_view", view)
        emit(run, "run.finished", {"status": run.status, "success": run.success, "external": True})
        judge_on_finish(run)
    session.run = run
    return run
