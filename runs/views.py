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
from agent_platform.errors import ServiceError
from agent_platform.models import ModelRequest, workspaces_of

from .agent import profiles
from .agent.schema import ALLOWED_KEYWORDS, SCHEMA_MAX_BYTES, schema_problems
from .agent.tracing import has_trace
from .forms import JUDGE_CONTEXT_SLOTS, judge_context_from, launch_arguments
from .launch import MAX_TURNS_LIMIT, MODEL_DEPRECATED_EVENT, launch_run, same_schema
from .models import Event, Run, Session
from .screenshots import content_type, storage_path

PAGE_SIZE = 50
# Event types the timeline draws in their own way; any other type is shown with its raw data.
KNOWN_TYPES = frozenset(
    {
        "run.started", "run.waiting", "agent.message", "agent.tool_use", "agent.tool_result", "agent.usage", "agent.final_view",
        "run.finished", "run.judged", "span.outcome_evaluation_start", "span.outcome_evaluation_end",
    }
)  # fmt: skip
VIOLATION_PREFIX = "output_schema_violation"


def demo_tasks(request: HttpRequest) -> list[dict]:
    """The bundled demo tasks the scripted model knows, as one-click presets of the launch form (schema as text)."""
    from demo_site.tasks import demo_tasks as bundled

    presets = []
    for demo in bundled(settings.DEMO_BASE_URL):
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
    """Runs with the column a list row needs beyond the run's own: the latest judge verdict. (Turns come from the
    run's signals, which the runtime saves every turn, so the row counts them as the turn budget does.)"""
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


REFUSED_PREFIXES = ("verdict_required", "Not executed")


def reply_labels(events: list[Event]) -> dict[int, str]:
    """Each model reply's separator in the timeline, numbered the way the turn budget counts: a reply whose browser
    action ran is an action turn ("Turn 2"); one that only called done is the verdict; any other is a reply."""
    results = {event.payload.get("tool_use_id"): event for event in events if event.type == "agent.tool_result"}
    acted: dict[int, bool] = {}
    verdict: set[int] = set()
    for event in events:
        reply = event.payload.get("turn")
        if event.type not in ("agent.message", "agent.tool_use") or not isinstance(reply, int):
            continue
        acted.setdefault(reply, False)
        if event.type != "agent.tool_use":
            continue
        if event.payload.get("toolset") == "browser":
            result = results.get(event.payload.get("id"))
            text = result_text(result.payload.get("content")) if result else ""
            if not text.startswith(REFUSED_PREFIXES):
                acted[reply] = True
            elif text.startswith("verdict_required"):
                verdict.add(reply)
        elif event.payload.get("name") == "done":
            verdict.add(reply)
    labels = {}
    action_turns = 0
    for reply in sorted(acted):
        if acted[reply]:
            action_turns += 1
            labels[reply] = f"Turn {action_turns}"
        else:
            labels[reply] = "Verdict" if reply in verdict else "Reply"
    return labels


def timeline(events: list[Event]) -> list[dict]:
    """The run's events as the template shows them: pretty tool inputs, result lines with notices marked."""
    items = []
    current_turn = None
    labels = reply_labels(events)
    for event in events:
        item = {"seq": event.seq, "type": event.type, "data": event.payload, "at": event.processed_at}
        turn = event.payload.get("turn") if event.type in ("agent.message", "agent.tool_use") else None
        if turn is not None and turn != current_turn:
            item["turn_start"] = turn
            item["turn_label"] = labels.get(turn, "Reply")
            item["turn_action"] = (
                item["turn_label"].removeprefix("Turn ") if item["turn_label"].startswith("Turn ") else ""
            )
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


def decimal_places(values: list) -> int | None:
    """How many decimals a column of numbers is shown with: as many as its most precise value has (at most 6), so
    prices read 49.00, 14.50, 9.99 and not 49.0, 14.5, 9.99. None for a column that is not all numbers."""
    numbers = [v for v in values if v is not None]
    if not numbers or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers):
        return None
    fractions = [repr(v) for v in numbers if isinstance(v, float) and not v.is_integer()]
    if not fractions:
        return 0  # whole numbers, even when JSON wrote them as 49.0
    return min(6, max(len(text.split(".")[1]) if "." in text and "e" not in text else 0 for text in fractions))


def cell(value, places: int | None):
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if places is not None and value is not None:
        return f"{value:.{places}f}"
    return value


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
            places = {column: decimal_places([row.get(column) for row in value]) for column in columns}
            rows = [
                [{"value": cell(row.get(c), places[c]), "numeric": places[c] is not None} for c in columns]
                for row in value
            ]
            found.append({"name": key, "columns": columns, "rows": rows})
    return found


# The runtime's signals in words (spec: Results and verdicts, Signals); a value of None reads "not yet".
SIGNAL_LABELS = {
    "turns": "Action turns used",
    "max_turns": "Action turns allowed",
    "budget_notices": "Budget warnings shown",
    "loop_nudges": "Told it was repeating itself",
    "stagnation_nudges": "Told the page stopped changing",
    "failures_max": "Failure budget reached",
    "verdict_turn": "What brought the verdict turn",
    "verdict_followed": "Called done on the verdict turn",
}
VERDICT_TURN_WORDS = {
    "none": "none (the agent ended on its own)",
    "cap": "the action budget",
    "failures": "five failures in a row",
    "prose": "a reply without done",
}
HOT_SIGNALS = ("failures_max", "loop_nudges", "stagnation_nudges")


def signal_rows(signals: dict) -> list[dict]:
    """Signals as labelled rows; `verdict_followed` only means something when a verdict turn happened."""
    rows = []
    for key, value in signals.items():
        if key == "verdict_followed" and signals.get("verdict_turn") in (None, "none"):
            shown = "no verdict turn"
        elif key == "verdict_turn":
            shown = VERDICT_TURN_WORDS.get(str(value), str(value))
        elif value is True:
            shown = "yes"
        elif value is False:
            shown = "no"
        elif value is None:
            shown = "not yet"
        else:
            shown = str(value)
        rows.append(
            {"key": key, "label": SIGNAL_LABELS.get(key, key.replace("_", " ")), "value": shown,
             "hot": key in HOT_SIGNALS and bool(value)}
        )  # fmt: skip
    return rows


def judge_state(run: Run, judged: bool) -> str:
    """The run's judging in one word for its pills: judged, judging, on (before it ends), skipped (cancelled runs
    are never judged), or "" for a run without the judge."""
    if judged:
        return "judged"
    if not run.judge:
        return ""
    if not run.is_finished:
        return "on"
    return "skipped" if run.status == Run.Status.CANCELLED else "judging"


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
    judgments = list(Judgment.objects.filter(run=run))
    return {
        "run": run,
        "judge_state": judge_state(run, bool(judgments)),
        "signal_rows": signal_rows(run.signals or {}),
        "data_json": json.dumps(run.data, indent=2, ensure_ascii=False) if run.data is not None else "",
        "data_tree": tree(run.data) if run.data is not None else None,
        "data_tables": tables(run.data),
        "violations": violations,
        "judgments": judgments,
        "outcome": outcome,
        "evaluations": list(outcome.evaluations.all()) if outcome else [],
        "usage_sources": usage_by(ModelRequest.objects.filter(run=run), "source"),
        "signals": run.signals or {},
        "judge_context_slots": JUDGE_CONTEXT_SLOTS,
        "has_trace": run.is_finished and has_trace(run.public_id),
    }


def turn_budget(run: Run, events: list[Event]) -> int:
    """Action turns used: the runtime's own count once it saved one, else the action turns in the timeline."""
    saved = (run.signals or {}).get("turns")
    if saved is not None:
        return int(saved)
    return sum(1 for label in reply_labels(events).values() if label.startswith("Turn "))


def replay_steps(events: list[Event]) -> list[dict]:
    """One replay step per screenshot: the picture, the agent's message of that reply, the action and its result.

    Texts are passed to the page as JSON (json_script) and drawn with textContent: they hold page and model text."""
    message_of: dict = {}
    use_of: dict = {}
    last_message = ""
    steps = []
    for event in events:
        data = event.payload
        if event.type == "agent.message":
            message_of[data.get("turn")] = message_of.get(data.get("turn"), "") + str(data.get("text") or "")
            last_message = message_of[data.get("turn")]
        elif event.type == "agent.tool_use":
            use_of[data.get("id")] = data
        elif event.type in ("agent.tool_result", "agent.final_view") and data.get("screenshot_url"):
            use = use_of.get(data.get("tool_use_id")) or {}
            final = event.type == "agent.final_view"
            steps.append(
                {
                    "seq": event.seq,
                    "screenshot": data["screenshot_url"],
                    "url": data.get("url") or "",
                    # the final view shows the agent's last words (its verdict reply)
                    "message": last_message if final else message_of.get(data.get("turn"), ""),
                    "action": "Final view" if final else str(use.get("name") or data.get("name") or ""),
                    "input": None if final else use.get("input"),
                    "result": "" if final else result_text(data.get("content"))[:2000],
                    "is_error": bool(data.get("is_error")),
                }
            )
    return steps


@login_required
def run_trace(request, run_id: str):
    """The run's Playwright trace (secrets masked), for `playwright show-trace` or trace.playwright.dev."""
    from .agent.tracing import trace_path

    run = run_for_user(request.user, run_id)
    path = trace_path(run.public_id)
    if not default_storage.exists(path):
        raise Http404("This run kept no trace.")
    response = FileResponse(
        default_storage.open(path, "rb"),
        content_type="application/zip",
        as_attachment=True,
        filename=f"{run.public_id}-trace.zip",
    )
    response["Cache-Control"] = "private, no-store"
    return response


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
            "replay_steps": replay_steps(events),
            "last_seq": events[-1].seq if events else 0,
            "screenshots": screenshots,
            "latest_screenshot": screenshots[-1] if screenshots else None,
            "turns": turns,
            "budget_percent": min(100, round(100 * turns / run.max_turns)) if run.max_turns else 0,
            "cost_percent": min(100, round(100 * run.cost_usd / run.max_cost_usd)) if run.max_cost_usd else 0,
            "session_runs": run.session.runs.count(),
            "live_config": {
                "socket": f"/ws/runs/{run.public_id}/",
                "last_seq": events[-1].seq if events else 0,
                "max_turns": run.max_turns,
                "max_cost_usd": str(run.max_cost_usd) if run.max_cost_usd is not None else None,
                "turns": turns,
                "finished": run.is_finished,
                "summary_url": reverse("runs:summary", args=[run.public_id]),
                "live_socket": f"/ws/runs/{run.public_id}/live/",
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
    except ServiceError as error:
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
            launched = launch_run(workspace, created_by=request.user, **launch_arguments(request.POST))
        except ServiceError as launch_error:
            error = launch_error
        else:
            return redirect("runs:detail", launched.run.public_id)
    if request.method == "POST":
        values, judge_context = request.POST, judge_context_from(request.POST)
    else:
        values, judge_context = follow_up_values(session, request.GET)
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
            "max_turns_default": settings.RUN_DEFAULT_MAX_TURNS,
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
        # A refused launch answers with the status the API would give it.
        status=error.status if error else 200,
    )


def follow_up_values(session: Session | None, query) -> tuple[dict, list[str]]:
    """What the launch form starts with: for a follow-up, the session's latest run's settings (model, turns, judge
    and its context, as the quick follow-up inherits them), overridden by what the link carries (the quick box's
    task when the operator asks for more options)."""
    values: dict = {}
    judge_context: list[str] = []
    latest = session.runs.order_by("-created_at", "-id").first() if session is not None else None
    if latest is not None:
        values = {"model": latest.model, "max_turns": latest.max_turns, "judge": latest.judge}
        judge_context = list(latest.judge_context or [])
    for field in ("task", "start_url", "model", "max_turns"):
        if query.get(field):
            values[field] = query.get(field)
    if "judge" in query:
        values["judge"] = bool(query.get("judge"))
        judge_context = judge_context_from(query)
    return values, judge_context


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
    runs = Run.objects.filter(session=OuterRef("pk"))
    first_run = runs.order_by("created_at", "id")
    latest_run = runs.order_by("-created_at", "-id")
    sessions = (
        Session.objects.for_workspace(workspace)
        .annotate(
            run_count=Count("runs"),
            last_run_at=Max("runs__created_at"),
            first_task=Subquery(first_run.values("task")[:1]),
            latest_status=Subquery(latest_run.values("status")[:1]),
            latest_run_id=Subquery(latest_run.values("public_id")[:1]),
        )
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
