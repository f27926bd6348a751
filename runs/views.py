"""Operator pages for runs and sessions: the list, the launch form, a run's live page, sessions, screenshots."""

import json
from datetime import date, datetime, time
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.core.paginator import Paginator
from django.db.models import Exists, IntegerField, OuterRef, Q, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.http import FileResponse, Http404, HttpRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from agent_platform.access import current_workspace
from agent_platform.models import ModelRequest, workspaces_of

from .agent import profiles
from .agent.schema import ALLOWED_KEYWORDS, SCHEMA_MAX_BYTES, schema_problems
from .forms import JUDGE_CONTEXT_SLOTS, judge_context_from, launch_arguments
from .launch import MAX_TURNS_DEFAULT, MAX_TURNS_LIMIT, MODEL_DEPRECATED_EVENT, LaunchError, launch_run, same_schema
from .models import Event, Run, Session
from .screenshots import content_type, storage_path

PAGE_SIZE = 50
# The launch form answers a refused launch with the status the API would give it.
LAUNCH_ERROR_STATUS = {"invalid_request": 400, "conflict": 409, "not_found": 404, "service_unavailable": 503}
# Event types the timeline draws in their own way; any other type is shown with its raw data.
KNOWN_TYPES = frozenset(
    {
        "run.started", "agent.message", "agent.tool_use", "agent.tool_result", "agent.usage", "agent.final_view",
        "run.finished", "run.judged", "span.outcome_evaluation_start", "span.outcome_evaluation_end",
    }
)  # fmt: skip
VIOLATION_PREFIX = "output_schema_violation"


def demo_tasks(request: HttpRequest) -> list[dict]:
    """The bundled demo tasks the scripted model knows, as one-click presets of the launch form (schema as text)."""
    from demo_site.tasks import demo_tasks as bundled

    presets = []
    for demo in bundled(request.build_absolute_uri("/")):
        schema = demo.get("output_schema")
        presets.append({**demo, "output_schema": json.dumps(schema, indent=2) if schema else ""})
    return presets


def run_for_user(user, run_id: str) -> Run:
    """A run of one of the user's workspaces, else 404: another workspace's run is never revealed to exist."""
    return get_object_or_404(
        Run.objects.select_related("session", "workspace"), public_id=run_id, workspace__in=workspaces_of(user)
    )


def session_for_user(user, session_id: str) -> Session:
    return get_object_or_404(Session, public_id=session_id, workspace__in=workspaces_of(user))


def with_judge_verdict(runs):
    """Runs with the columns of a list row: the latest judge verdict and the turn of the latest action."""
    from judge.models import Judgment

    latest = Judgment.objects.filter(run=OuterRef("pk")).order_by("-judged_at", "-id")
    last_action = Event.objects.filter(run=OuterRef("pk"), type="agent.tool_use").order_by("-seq")
    deprecation = Event.objects.filter(run=OuterRef("pk"), type=MODEL_DEPRECATED_EVENT).order_by("seq")
    return runs.annotate(
        judge_verdict=Subquery(latest.values("verdict")[:1]),
        # The model was deprecated when the run was launched: the row shows a badge, titled with the retirement date.
        model_retires_at=Subquery(deprecation.values("payload__retires_at")[:1]),
        model_deprecated=Exists(deprecation),
        # KT + Cast: the turn as an integer on every backend (SQLite hands a bare JSON number back otherwise).
        last_turn=Subquery(last_action.annotate(turn=Cast(KT("payload__turn"), IntegerField())).values("turn")[:1]),
    )


def _parse_day(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def filtered_runs(workspace, params) -> tuple:
    """The workspace's runs narrowed by the list's filters; returns the queryset and the filters in force."""
    runs = with_judge_verdict(Run.objects.for_workspace(workspace).select_related("session"))
    applied = {}
    status = params.get("status", "")
    if status in Run.Status.values:
        runs = runs.filter(status=status)
        applied["status"] = status
    verdict = params.get("verdict", "")
    if verdict in ("success", "failure", "none"):
        runs = runs.filter(success={"success": True, "failure": False, "none": None}[verdict])
        applied["verdict"] = verdict
    judge_verdict = params.get("judge", "")
    if judge_verdict in ("pass", "fail", "uncertain"):
        runs = runs.filter(judge_verdict=judge_verdict)
        applied["judge"] = judge_verdict
    elif judge_verdict == "none":
        runs = runs.filter(judge_verdict__isnull=True)
        applied["judge"] = judge_verdict
    if session := params.get("session", "").strip():
        runs = runs.filter(session__public_id=session)
        applied["session"] = session
    if (day := _parse_day(params.get("from", ""))) is not None:
        runs = runs.filter(created_at__gte=timezone.make_aware(datetime.combine(day, time.min)))
        applied["from"] = day.isoformat()
    if (day := _parse_day(params.get("to", ""))) is not None:
        runs = runs.filter(created_at__lte=timezone.make_aware(datetime.combine(day, time.max)))
        applied["to"] = day.isoformat()
    if query := params.get("q", "").strip():
        runs = runs.filter(Q(task__icontains=query) | Q(public_id=query))
        applied["q"] = query
    return runs, applied


@login_required
def run_list(request):
    workspace = current_workspace(request)
    runs, applied = filtered_runs(workspace, request.GET)
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(
        request,
        "runs/list.html",
        {
            "workspace": workspace,
            "page": page,
            "runs": page.object_list,
            "applied": applied,
            "filter_query": urlencode(applied),
            "statuses": Run.Status.values,
            # New runs are prepended live only where they belong: the first page of the unfiltered list.
            "prepend_new": page.number == 1 and not applied,
            "live_config": {
                "socket": f"/ws/runs/?workspace={workspace.slug}",
                "row_url": reverse("runs:row", args=["RUN_ID"]),
            },
        },
    )


@login_required
def run_row(request, run_id: str):
    """One row of the runs list, re-rendered when the list's socket says the run changed."""
    workspace = current_workspace(request)
    run = get_object_or_404(with_judge_verdict(Run.objects.for_workspace(workspace)), public_id=run_id)
    return render(request, "runs/_row.html", {"run": run})


# --- the run page ----------------------------------------------------------------------------------------------------


def result_text(content) -> str:
    """A tool result's content as text: a string, or the text blocks of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "image":
                parts.append("[image]")
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


def result_lines(payload: dict) -> list[dict]:
    lines = [
        {"text": line, "notice": line.startswith("[notice]")}
        for line in result_text(payload.get("content")).split("\n")
    ]
    known = {line["text"] for line in lines if line["notice"]}
    for notice in payload.get("notices") or []:
        text = notice if str(notice).startswith("[notice]") else f"[notice] {notice}"
        if text not in known:
            lines.append({"text": text, "notice": True})
    return lines


def timeline(events: list[Event]) -> list[dict]:
    """The run's events as the template shows them: pretty tool inputs, result lines with notices marked."""
    items = []
    current_turn = None
    for event in events:
        item = {"seq": event.seq, "type": event.type, "data": event.payload, "at": event.processed_at}
        turn = event.payload.get("turn") if event.type in ("agent.message", "agent.tool_use") else None
        if turn is not None and turn != current_turn:
            item["turn_start"] = turn
            current_turn = turn
        if event.type == "agent.tool_use":
            item["input_json"] = json.dumps(event.payload.get("input"), indent=2, ensure_ascii=False)
        elif event.type == "agent.tool_result":
            item["lines"] = result_lines(event.payload)
        elif event.type not in KNOWN_TYPES:
            item["raw_json"] = json.dumps(event.payload, indent=2, ensure_ascii=False)
        items.append(item)
    return items


def tree(value, depth: int = 0) -> dict:
    """A JSON value as nested nodes for the data tree template."""
    if isinstance(value, dict):
        return {"kind": "object", "items": [(str(k), tree(v, depth + 1)) for k, v in value.items()]}
    if isinstance(value, list):
        return {"kind": "array", "items": [(str(i), tree(v, depth + 1)) for i, v in enumerate(value)]}
    kind = (
        "string"
        if isinstance(value, str)
        else "number"
        if isinstance(value, int | float) and not isinstance(value, bool)
        else "other"
    )
    return {"kind": "scalar", "type": kind, "json": json.dumps(value, ensure_ascii=False)}


def tables(data) -> list[dict]:
    """The arrays of flat objects in `data` (top level or one level down) as tables: the readable view of results."""
    found = []
    if not isinstance(data, dict):
        return found
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            columns: list[str] = []
            for row in value:
                columns.extend(c for c in row if c not in columns)
            rows = [
                [row.get(c) if not isinstance(row.get(c), dict | list) else json.dumps(row.get(c)) for c in columns]
                for row in value
            ]
            found.append({"name": key, "columns": columns, "rows": rows})
    return found


def summary_context(run: Run) -> dict:
    """Everything on the run page outside the timeline: verdict, data, judgments, evaluations, signals, usage."""
    from agent_platform.reports import usage_by
    from judge.models import Judgment, Outcome

    run.refresh_from_db()
    violations = [
        {"seq": event.seq, "text": result_text(event.payload.get("content"))}
        for event in run.events.filter(type="agent.tool_result").order_by("seq")
        if event.payload.get("is_error") and result_text(event.payload.get("content")).startswith(VIOLATION_PREFIX)
    ]
    outcome = Outcome.objects.filter(run=run).first()
    return {
        "run": run,
        "data_json": json.dumps(run.data, indent=2, ensure_ascii=False) if run.data is not None else "",
        "data_tree": tree(run.data) if run.data is not None else None,
        "data_tables": tables(run.data),
        "violations": violations,
        "judgments": list(Judgment.objects.filter(run=run)),
        "outcome": outcome,
        "evaluations": list(outcome.evaluations.all()) if outcome else [],
        "usage_sources": usage_by(ModelRequest.objects.filter(run=run), "source"),
        "signals": run.signals or {},
        "judge_context_slots": JUDGE_CONTEXT_SLOTS,
    }


def turn_budget(run: Run, events: list[Event]) -> int:
    turns = {event.payload.get("turn") for event in events if event.type == "agent.tool_use"}
    return int((run.signals or {}).get("turns") or len(turns - {None}))


@login_required
def run_detail(request, run_id: str):
    run = run_for_user(request.user, run_id)
    events = list(run.events.order_by("seq"))
    screenshots = [
        {"seq": event.seq, "url": event.payload["screenshot_url"], "page_url": event.payload.get("url") or ""}
        for event in events
        if event.type in ("agent.tool_result", "agent.final_view") and event.payload.get("screenshot_url")
    ]
    context = summary_context(run)
    turns = turn_budget(run, events)
    context.update(
        {
            "timeline": timeline(events),
            "model_deprecation": next((e.payload for e in events if e.type == MODEL_DEPRECATED_EVENT), None),
            "last_seq": events[-1].seq if events else 0,
            "screenshots": screenshots,
            "latest_screenshot": screenshots[-1] if screenshots else None,
            "turns": turns,
            "budget_percent": min(100, round(100 * turns / run.max_turns)) if run.max_turns else 0,
            "session_runs": run.session.runs.count(),
            "live_config": {
                "socket": f"/ws/runs/{run.public_id}/",
                "last_seq": events[-1].seq if events else 0,
                "max_turns": run.max_turns,
                "turns": turns,
                "finished": run.is_finished,
                "summary_url": reverse("runs:summary", args=[run.public_id]),
                "usage": {
                    "requests": run.usage_requests,
                    "total": run.usage_total,
                    "output": run.usage_output,
                    "cache_read": run.usage_cache_read,
                    "cost": str(run.cost_usd),
                },
            },
        }
    )
    return render(request, "runs/detail.html", context)


@login_required
def run_summary(request, run_id: str):
    """The run page's result panels, re-rendered when the live viewer sees the run finish or get judged."""
    run = run_for_user(request.user, run_id)
    return render(request, "runs/_summary.html", summary_context(run))


@login_required
@require_POST
def run_cancel(request, run_id: str):
    from .lifecycle import request_cancel

    run = run_for_user(request.user, run_id)
    if run.is_finished:
        messages.info(request, f"{run.public_id} had already finished.")
    else:
        request_cancel(run)
        messages.success(request, f"Cancel requested for {run.public_id}; it stops at its next safe point.")
    return redirect("runs:detail", run.public_id)


@login_required
@require_POST
def run_rejudge(request, run_id: str):
    from judge.services import request_rejudge

    run = run_for_user(request.user, run_id)
    try:
        request_rejudge(run, judge_context=judge_context_from(request.POST), requested_by=request.user)
    except LaunchError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "A new judgment was requested; it appears here when the judge is done.")
    return redirect(reverse("runs:detail", args=[run.public_id]) + "#judgments")


@login_required
def screenshot(request, run_id: str, name: str):
    run = run_for_user(request.user, run_id)
    path = storage_path(run.public_id, name)
    if path is None or not default_storage.exists(path):
        raise Http404("No such screenshot.")
    response = FileResponse(default_storage.open(path, "rb"), content_type=content_type(name))
    response["Cache-Control"] = "private, max-age=86400"
    return response


# --- launching -------------------------------------------------------------------------------------------------------


def model_choices() -> tuple[list[dict], str | None]:
    """The active models the launch form offers (with each one's effort levels and thinking modes), or, when the
    Models API cannot be asked, no choices and the reason (the form then takes a model id as text)."""
    try:
        lineup = profiles.active_models()
    except profiles.ProfilesUnavailable as error:
        return [], str(error)
    return [
        {
            "id": found.id,
            "name": found.display_name,
            "efforts": list(found.effort_levels),
            "thinking": list(found.thinking_modes),
        }
        for found in lineup
    ], None


@login_required
def run_new(request):
    workspace = current_workspace(request)
    source = request.POST if request.method == "POST" else request.GET
    session = None
    if session_id := source.get("session", "") or source.get("session_id", ""):
        session = Session.objects.for_workspace(workspace).filter(public_id=session_id).first()
        if session is None:
            raise Http404("No such session.")
    error = None
    if request.method == "POST":
        try:
            run = launch_run(workspace, created_by=request.user, **launch_arguments(request.POST))
        except LaunchError as launch_error:
            error = launch_error
        else:
            return redirect("runs:detail", run.public_id)
    values = request.POST if request.method == "POST" else {}
    judge_context = judge_context_from(request.POST) if request.method == "POST" else []
    models, models_unavailable = model_choices()
    return render(
        request,
        "runs/new.html",
        {
            "workspace": workspace,
            "session": session,
            "session_schema_json": json.dumps(session.output_schema, indent=2)
            if session and session.output_schema
            else "",
            "values": values,
            "error": error,
            "judge_context": judge_context + [""] * (len(JUDGE_CONTEXT_SLOTS) - len(judge_context)),
            "demo_tasks": demo_tasks(request),
            "max_turns_default": MAX_TURNS_DEFAULT,
            "default_model": settings.DEFAULT_MODEL,
            "models": models,
            "models_unavailable": models_unavailable,
            "effort_levels": ["low", "medium", "high", "xhigh", "max"],
            "thinking_modes": ["adaptive", "between_tools", "disabled"],
            "max_turns_limit": MAX_TURNS_LIMIT,
            "schema_max_bytes": SCHEMA_MAX_BYTES,
            "launch_config": {
                "lint_url": reverse("runs:schema_lint") + (f"?session={session.public_id}" if session else ""),
                "max_bytes": SCHEMA_MAX_BYTES,
                "allowed": sorted(ALLOWED_KEYWORDS),
                "session_schema": session.output_schema if session else None,
                "in_session": session is not None,
                "presets": demo_tasks(request),
                "models": models,
            },
        },
        status=LAUNCH_ERROR_STATUS.get(error.type, 400) if error else 200,
    )


@login_required
@require_POST
def schema_lint(request):
    """The launch's schema rules as JSON for the form's lint-as-you-type: {ok, problems: [{path, keyword, message}],
    conflict}. The body is the schema text; `?session=` compares it with that session's schema."""
    workspace = current_workspace(request)
    text = request.body.decode("utf-8", errors="replace").strip()
    if not text:
        return JsonResponse({"ok": True, "problems": [], "conflict": None, "empty": True})
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as error:
        problem = {
            "path": "$",
            "keyword": "",
            "message": f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
        }
        return JsonResponse({"ok": False, "problems": [problem], "conflict": None})
    problems = [{"path": p.path, "keyword": p.keyword, "message": p.message} for p in schema_problems(schema)]
    conflict = None
    if session_id := request.GET.get("session"):
        session = Session.objects.for_workspace(workspace).filter(public_id=session_id).first()
        if session is not None and session.output_schema is None:
            conflict = (
                f"Session {session.public_id} has no output schema and a follow-up cannot add one; this launch would "
                "be refused as a conflict. Clear the schema, or start a new session."
            )
        elif session is not None and not same_schema(session.output_schema, schema):
            conflict = (
                f"Session {session.public_id} already has a different output schema; this launch would be refused "
                "as a conflict. Clear the schema to inherit the session's, or start a new session."
            )
    return JsonResponse({"ok": not problems and conflict is None, "problems": problems, "conflict": conflict})


# --- sessions --------------------------------------------------------------------------------------------------------


@login_required
def session_list(request):
    from django.db.models import Count, Max

    workspace = current_workspace(request)
    sessions = (
        Session.objects.for_workspace(workspace)
        .annotate(run_count=Count("runs"), last_run_at=Max("runs__created_at"))
        .order_by("-created_at", "-id")
    )
    page = Paginator(sessions, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "runs/sessions.html", {"workspace": workspace, "page": page, "sessions": page.object_list})


@login_required
def session_detail(request, session_id: str):
    session = session_for_user(request.user, session_id)
    runs = with_judge_verdict(session.runs.select_related("session")).order_by("created_at", "id")
    return render(
        request,
        "runs/session.html",
        {
            "session": session,
            "runs": runs,
            "schema_json": json.dumps(session.output_schema, indent=2) if session.output_schema else "",
        },
    )
