"""The Browsers pages: a workspace's browser sessions (status, duration, who started them) and one session's page:
its live picture with take control while it runs, its final view, timeline read from CDP, recording and downloads,
and Stop."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace
from agent_platform.artifacts import serve_stored_file
from agent_platform.errors import NotFound

from . import services, storage
from .models import BrowserSession

SESSIONS_SHOWN = 100


def find(request: OperatorRequest, session_id: str) -> BrowserSession:
    try:
        return services.get_session(current_workspace(request), session_id)
    except NotFound:
        raise Http404("No such browser session in this workspace.") from None


@login_required
def session_list(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    sessions = BrowserSession.objects.for_workspace(workspace).select_related("created_by", "api_key", "run")[
        :SESSIONS_SHOWN
    ]
    month = timezone.now().replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    context = {"workspace": workspace, "sessions": sessions, "usage": services.usage(workspace, month)}
    return render(request, "browsers/list.html", context)


@login_required
def session_detail(request: OperatorRequest, session_id: str) -> HttpResponse:
    session = find(request, session_id)
    context = {
        "session": session,
        "events": session.events.order_by("seq")[:500],
        "downloads": storage.list_downloads(session),
        # the run page's live picture and take control (static/js/live_view.js, control.js), on the session's socket
        "live_config": {
            "finished": not session.is_live,
            "live_socket": f"/ws/browsers/{session.public_id}/live/",
            "control": True,
        },
    }
    return render(request, "browsers/detail.html", context)


@login_required
@require_POST
def session_stop(request: OperatorRequest, session_id: str) -> HttpResponse:
    services.request_stop(find(request, session_id))
    return redirect("browsers:detail", session_id)


@login_required
def session_screenshot(request: OperatorRequest, session_id: str) -> FileResponse:
    session = find(request, session_id)
    if not session.final_screenshot:
        raise Http404("This session kept no final view.")
    return serve_stored_file(
        storage.screenshot_path(session, session.final_screenshot), content_type="image/png", missing="No such image."
    )


@login_required
def session_trace(request: OperatorRequest, session_id: str) -> FileResponse:
    session = find(request, session_id)
    return serve_stored_file(
        storage.trace_path(session),
        content_type="application/zip",
        missing="This session kept no recording.",
        download_name=f"{session.public_id}-trace.zip",
    )


@login_required
def session_download(request: OperatorRequest, session_id: str, name: str) -> FileResponse:
    session = find(request, session_id)
    return serve_stored_file(
        storage.download_path(session, name),
        content_type="application/octet-stream",
        missing="No such download.",
        download_name=storage.clean_name(name),
    )
