"""The shared session page, signed out: a session's runs read-only (task, timeline, screenshots, verdict, data,
judgment), and the operator's share, turn-off and purge buttons on the session page.

What a link opens is only its own session: screenshots are served through the link, checked against its session; no
live view, no person card, no messages, no trace, no re-judging; secrets stay as the events hold them (masked)."""

import json
import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_POST

from agent_platform.artifacts import serve_stored_file
from agent_platform.errors import Conflict, InvalidRequest

from . import presenters, purge, shares
from .models import Event, Run, SessionShare
from .screenshots import content_type, storage_path
from .views import session_for_user, summary_context

# An event's screenshot as the operator's pages serve it: /runs/<run>/screenshots/<name>.
SCREENSHOT_URL = re.compile(r"^/runs/(?P<run>[^/]+)/screenshots/(?P<name>[^/]+)$")


def open_or_refuse(token: str) -> SessionShare:
    try:
        return shares.open_share(token)
    except SessionShare.DoesNotExist:
        raise Http404("No such link.") from None


def through_link(url: object, token: str) -> object:
    """A screenshot URL of the operator's pages as the same picture through the link; anything else unchanged."""
    found = SCREENSHOT_URL.match(url) if isinstance(url, str) else None
    if found is None:
        return url
    return reverse("share:screenshot", args=[token, found["run"], found["name"]])


def shared_events(run: Run, token: str) -> list[Event]:
    events = list(run.events.order_by("seq"))
    for event in events:
        if "screenshot_url" in event.payload:
            event.payload = {**event.payload, "screenshot_url": through_link(event.payload["screenshot_url"], token)}
    return events


def shared_run(request: HttpRequest, run: Run, token: str) -> str:
    """One run of the shared session, rendered: its task, verdict, data, judgment, screenshots and timeline."""
    events = shared_events(run, token)
    context = summary_context(run)
    context.update(
        {
            "timeline": presenters.timeline(events),
            "screenshots": presenters.screenshots(events),
            "has_trace": False,
            "read_only": True,
        }
    )
    return render_to_string("share/_run.html", context, request)


def shared_session(request: HttpRequest, token: str) -> HttpResponse:
    """The page a link opens: 404 for a token no session has, 410 for a link turned off or expired."""
    try:
        share = open_or_refuse(token)
    except shares.ShareClosed:
        return render(request, "share/gone.html", status=410)
    session = share.session
    runs = list(session.runs.order_by("created_at", "id"))
    response = render(
        request,
        "share/session.html",
        {
            "share": share,
            "session": session,
            "shared_runs": [shared_run(request, run, token) for run in runs],
            "schema_json": json.dumps(session.output_schema, indent=2) if session.output_schema else "",
        },
    )
    # A link is a capability: it never leaks to another site through Referer, and no cache keeps the page.
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    response["X-Robots-Tag"] = "noindex"
    return response


def shared_screenshot(request: HttpRequest, token: str, run_id: str, name: str) -> FileResponse:
    """A screenshot of a run of the link's session; any other run's is 404, as is one of a closed link."""
    share = SessionShare.objects.filter(token=token).select_related("session").first()
    if share is None or not share.active or share.expired:
        raise Http404("No such link.")
    if not share.session.runs.filter(public_id=run_id).exists():
        raise Http404("No such screenshot.")
    path = storage_path(run_id, name)
    if path is None:
        raise Http404("No such screenshot.")
    return serve_stored_file(path, content_type=content_type(name), missing="No such screenshot.")


# --- the operator's side ---------------------------------------------------------------------------------------------

EXPIRY_CHOICES = {"": None, "1d": 86_400, "7d": 7 * 86_400, "30d": 30 * 86_400}


@login_required
@require_POST
def session_share(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_for_user(request.user, session_id)
    expires_in = EXPIRY_CHOICES.get(request.POST.get("expires", ""))
    expires_at = shares.clean_expires_in(expires_in)
    user = request.user if request.user.is_authenticated else None
    shares.share_session(session, by=user, expires_at=expires_at, set_expiry=True)
    messages.success(request, "The share link is on: anyone who has it sees this session, read-only.")
    return redirect("runs:session", session.public_id)


@login_required
@require_POST
def session_unshare(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_for_user(request.user, session_id)
    shares.set_active(session, False)
    messages.success(request, "The share link is off: it now answers 410 Gone.")
    return redirect("runs:session", session.public_id)


@login_required
@require_POST
def session_purge(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_for_user(request.user, session_id)
    try:
        purged = purge.purge_session(session)
    except (Conflict, InvalidRequest) as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Purged {len(purged)} run{'s' if len(purged) != 1 else ''}: usage and cost kept.")
    return redirect("runs:session", session.public_id)
