"""Operator pages of the platform: choosing a workspace, its settings (members, API keys) and its usage; and the
Prometheus scrape endpoint."""

from datetime import date, timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST
from prometheus_client import CONTENT_TYPE_LATEST

from . import meters, metrics
from .access import OperatorRequest, choose_workspace, current_workspace, is_owner
from .lib.money import rounded_usd
from .models import ApiKey, Membership, ModelRequest
from .reports import usage_by, usage_totals

USAGE_DAYS_DEFAULT = 30
USAGE_DAYS_CHOICES = (7, 30, 90)
# The bars use the whole width: the pad only leaves room for the top label and the day labels below.
CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 900, 220, 22
SOURCES = [choice for choice, _ in ModelRequest.Source.choices]


@login_required
@require_POST
def choose(request: OperatorRequest, slug: str) -> HttpResponse:
    choose_workspace(request, slug)
    return redirect("runs:list")


NEW_KEY_SESSION_KEY = "platform.new_api_key"


@login_required
def workspace_settings(request: OperatorRequest) -> HttpResponse:
    """The workspace's members and keys; right after a key is made, its secret once (taken out of the session, so a
    reload neither shows it again nor makes a second key)."""
    workspace = current_workspace(request)
    new_key = request.session.pop(NEW_KEY_SESSION_KEY, None)
    if new_key and new_key.get("workspace") != workspace.pk:
        new_key = None
    response = render(
        request,
        "platform/settings.html",
        {
            "workspace": workspace,
            "members": Membership.objects.filter(workspace=workspace).select_related("user"),
            "keys": ApiKey.objects.filter(workspace=workspace).select_related("created_by"),
            "can_manage": is_owner(request.user, workspace),
            "new_key": new_key,
        },
    )
    if new_key:
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def api_key_create(request: OperatorRequest) -> HttpResponse:
    """Issue a key, then redirect (post/redirect/get) to the settings page, which shows its secret once."""
    workspace = current_workspace(request)
    if not is_owner(request.user, workspace):
        raise PermissionDenied("Only a workspace owner manages API keys.")
    name = request.POST.get("name", "").strip()[:100]
    if not name:
        messages.error(request, "Give the key a name, so you can tell it apart when you revoke it.")
        return redirect("platform:settings")
    key, secret = ApiKey.issue(workspace, name=name, created_by=request.user)
    request.session[NEW_KEY_SESSION_KEY] = {
        "workspace": workspace.pk,
        "name": key.name,
        "display": key.display,
        "secret": secret,
    }
    return redirect("platform:settings")


@login_required
@require_POST
def api_key_revoke(request: OperatorRequest, prefix: str) -> HttpResponse:
    workspace = current_workspace(request)
    if not is_owner(request.user, workspace):
        raise PermissionDenied("Only a workspace owner manages API keys.")
    key = get_object_or_404(ApiKey, workspace=workspace, prefix=prefix)
    key.revoke()
    messages.success(request, f"Key {key.display} is revoked; requests using it now get 401.")
    return redirect("platform:settings")


def cost_chart(days: list[date], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """An inline SVG bar chart of cost per day, stacked by source; sized in the view so the template only draws."""
    by_day: dict[date, dict[str, float]] = {day: dict.fromkeys(SOURCES, 0.0) for day in days}
    for row in rows:
        if row["day"] in by_day:
            by_day[row["day"]][row["source"]] += float(row["cost_usd"])
    peak = max((sum(v.values()) for v in by_day.values()), default=0.0) or 1.0
    inner_height = CHART_HEIGHT - 2 * CHART_PAD
    slot = (CHART_WIDTH - 2 * CHART_PAD) / max(1, len(days))
    bars = []
    for index, day in enumerate(days):
        y = float(CHART_HEIGHT - CHART_PAD)
        x = CHART_PAD + index * slot + slot * 0.15
        for source in SOURCES:
            cost = by_day[day][source]
            if cost <= 0:
                continue
            height = max(1.0, inner_height * cost / peak)
            y -= height
            bars.append(
                {"x": round(x, 1), "y": round(y, 1), "width": round(slot * 0.7, 1), "height": round(height, 1),
                 "source": source, "title": f"{day:%Y-%m-%d} {source}: {rounded_usd(cost)}"}
            )  # fmt: skip
    # Counted back from the last day, so today always has its label; at most about ten labels.
    step = 1 if len(days) <= 10 else -(-len(days) // 10)
    last = len(days) - 1
    labels = [
        {"x": round(CHART_PAD + i * slot + slot / 2, 1), "text": "today" if i == last else f"{day:%b} {day.day}"}
        for i, day in enumerate(days)
        if (last - i) % step == 0
    ]
    return {
        "width": CHART_WIDTH,
        "height": CHART_HEIGHT,
        "bars": bars,
        "labels": labels,
        "peak": f"{peak:.4f}" if peak != 1.0 or any(bars) else "0",
        "baseline": CHART_HEIGHT - CHART_PAD,
        "top": CHART_PAD,
        "label_y": CHART_HEIGHT - 8,
        "left": CHART_PAD,
        "right": CHART_WIDTH - CHART_PAD,
    }


@login_required
def usage(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    try:
        span = int(request.GET.get("days", USAGE_DAYS_DEFAULT))
    except ValueError:
        span = USAGE_DAYS_DEFAULT
    span = span if span in USAGE_DAYS_CHOICES else USAGE_DAYS_DEFAULT
    today = timezone.localdate()
    first = today - timedelta(days=span - 1)
    in_span = ModelRequest.objects.for_workspace(workspace).filter(created_at__date__gte=first)
    readings = meters.read(workspace, meters.day_start(first))
    metered = meters.totals(readings)
    # Real spend only; the scripted demo model's requests (billed $0) are shown on a table of their own.
    requests, scripted = in_span.real(), in_span.scripted()
    days = [first + timedelta(days=offset) for offset in range(span)]
    return render(
        request,
        "platform/usage.html",
        {
            "workspace": workspace,
            "span": span,
            "span_choices": USAGE_DAYS_CHOICES,
            "totals": usage_totals(requests),
            "by_model": usage_by(requests, "model"),
            "by_source": usage_by(requests, "source"),
            "by_day": usage_by(requests, "day", newest_first=True),
            "chart": cost_chart(days, usage_by(requests, ("day", "source"))),
            "sources": SOURCES,
            "scripted_totals": usage_totals(scripted),
            "scripted_by_source": usage_by(scripted, "source"),
            # browser minutes and any other meter: beside the model requests, each with its own cost
            "meters": metered,
            "total_cost": usage_totals(requests)["cost_usd"] + meters.total_cost(metered),
            "metered_by_day": meters.grouped(readings, "day"),
        },
    )


@require_GET
def metrics_scrape(request: HttpRequest) -> HttpResponse:
    """`/metrics` for Prometheus: a bearer token (METRICS_TOKEN) instead of a session; no token configured is no
    endpoint (404), so an installation that never opted in shows nothing of itself."""
    if not settings.METRICS_TOKEN:
        raise Http404("metrics are off: set METRICS_TOKEN")
    status = metrics.authorization_status(request.headers.get("Authorization", ""))
    if status != 200:
        refused = HttpResponse(metrics.REFUSALS[status], status=status, content_type="text/plain")
        refused["WWW-Authenticate"] = "Bearer"
        return refused
    response = HttpResponse(metrics.web_exposition(), content_type=CONTENT_TYPE_LATEST)
    response["Cache-Control"] = "no-store"
    return response
