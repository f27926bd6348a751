"""Operator pages for runs and sessions: the list, the launch form, a run's live page, sessions, screenshots. The
views handle the request and fetch; what the pages show is made in runs/presenters.py. (The re-judge action is the
judge's, judge/views.py.)"""

import json
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Paginator
from django.db.models import Count, Exists, IntegerField, Max, OuterRef, Q, QuerySet, Subquery
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from agent_platform import llm
from agent_platform.access import OperatorRequest, current_workspace
from agent_platform.artifacts import serve_stored_file
from agent_platform.errors import ServiceError
from agent_platform.lookup import UUID_ID
from agent_platform.models import ModelRequest, Workspace, workspaces_of
from agent_platform.reports import usage_by
from judge.models import Outcome, latest_judge_verdict
from runs.presets import demo_tasks as bundled_demo_tasks
from runs.schema import ALLOWED_KEYWORDS, SCHEMA_MAX_BYTES, schema_problems
from runs.traces import has_trace, trace_path

from . import event_types, human, presenters
from .files import attachment, files_of_run, upload_files
from .forms import JUDGE_CONTEXT_SLOTS, judge_context_from, launch_arguments
from .launch import launch
from .launch_rules import MAX_TURNS_LIMIT, LaunchRequest, same_schema
from .lifecycle import request_cancel
from .models import Event, Proxy, Run, RunInput, Session, SessionShare
from .profiles.models import Profile, what_save_stores
from .recipes.models import Replay
from .screenshots import content_type, storage_path


class ListRowAnnotations(TypedDict):
    """What a runs list row shows beyond the run's own fields (with_judge_verdict adds these)."""

    judge_verdict: str | None
    model_retires_at: str | None
    model_deprecated: bool
    last_turn: int | None


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    ListRun = WithAnnotations[Run, ListRowAnnotations]

PAGE_SIZE = 50
# The newest batches offered in the runs list's batch filter (an older one is reached from its batch page's link).
BATCH_CHOICES = 20


def demo_tasks(workspace: Workspace) -> list[dict[str, Any]]:
    """The bundled demo tasks the scripted model knows, as one-click presets of the launch form (schema and secrets
    as the form's text, a profile by the workspace's profile of that name)."""
    profiles = dict(Profile.objects.for_workspace(workspace).values_list("name", "public_id"))
    presets = []
    for demo in bundled_demo_tasks(settings.DEMO_BASE_URL):
        schema = demo.get("output_schema")
        secrets = "\n".join(f"{name}={value}" for name, value in (demo.get("secrets") or {}).items())
        demo.pop("sample_file", None)  # only a seeded run is given the sample; the form's operator attaches a file
        presets.append(
            {
                **demo,
                "output_schema": json.dumps(schema, indent=2) if schema else "",
                "secrets": secrets,
                "profile_id": profiles.get(demo.get("profile") or "", ""),
            }
        )
    return presets


def run_for_user(user: AbstractBaseUser | AnonymousUser, run_id: str) -> Run:
    """A run of one of the user's workspaces, else 404: another workspace's run is never revealed to exist."""
    return get_object_or_404(
        Run.objects.select_related("session", "session__proxy", "workspace", "profile"),
        **id_lookup(run_id),
        workspace__in=workspaces_of(user),
    )


def session_for_user(user: AbstractBaseUser | AnonymousUser, session_id: str) -> Session:
    return get_object_or_404(Session, **id_lookup(session_id), workspace__in=workspaces_of(user))


def id_lookup(value: str) -> dict[str, str]:
    """How to find a run or session by the id in a page's URL: its run_…/sess_… id, or the UUID v4 gives it."""
    return {"uuid": value} if UUID_ID.match(value) else {"public_id": value}


def with_judge_verdict(runs: QuerySet[Run]) -> "QuerySet[ListRun]":
    """Runs with the column a list row needs beyond the run's own: the latest judge verdict. (Turns come from the
    run's signals, which the runtime saves every turn, so the row counts them as the turn budget does.)"""
    last_action = Event.objects.filter(run=OuterRef("pk"), type="agent.tool_use").order_by("-seq")
    deprecation = Event.objects.filter(run=OuterRef("pk"), type=event_types.MODEL_DEPRECATED.name).order_by("seq")
    return runs.annotate(
        judge_verdict=latest_judge_verdict(),
        # The model was deprecated when the run was launched: the row shows a badge, titled with the retirement date.
        model_retires_at=Subquery(deprecation.values("payload__retires_at")[:1]),
        model_deprecated=Exists(deprecation),
        # KT + Cast: the turn as an integer on every backend (SQLite hands a bare JSON number back otherwise).
        last_turn=Subquery(last_action.annotate(turn=Cast(KT("payload__turn"), IntegerField())).values("turn")[:1]),
        # A question to the operator waits on an answer (only while the run runs: its end closes the question): the
        # row says the run waits for a person, as it does for a pause.
        asking_person=Exists(RunInput.objects.filter(run=OuterRef("pk"), state=RunInput.State.PENDING)),
    )


def _parse_day(value: str) -> date | None:
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def filtered_runs(workspace: Workspace, params: Mapping[str, str]) -> "tuple[QuerySet[ListRun], dict[str, str]]":
    """The workspace's runs narrowed by the list's filters; returns the queryset and the filters in force."""
    runs = with_judge_verdict(Run.objects.for_workspace(workspace).select_related("session", "batch_item__batch"))
    applied: dict[str, str] = {}
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
    # Batches launch many runs at once: the list can hide them, show only them, or one batch's (evals' BatchRun rows,
    # read through the relation they declare on Run, as the judge's are).
    batch = params.get("batch", "").strip()
    if batch == "none":
        runs = runs.filter(batch_item__isnull=True)
    elif batch == "any":
        runs = runs.filter(batch_item__isnull=False)
    elif batch:
        runs = runs.filter(batch_item__batch__public_id=batch)
    if batch:
        applied["batch"] = batch
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


def batch_choices(workspace: Workspace, chosen: str) -> list[Any]:
    """The batches the filter offers: the newest, and the chosen one wherever it is (another workspace's: never)."""
    batches = list(workspace.batches.order_by("-created_at", "-id")[:BATCH_CHOICES])
    if chosen not in ("", "none", "any") and all(batch.public_id != chosen for batch in batches):
        batches.extend(workspace.batches.filter(public_id=chosen))
    return batches


@login_required
def run_list(request: HttpRequest) -> HttpResponse:
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
            "batches": batch_choices(workspace, applied.get("batch", "")),
            # New runs are prepended live only where they belong: the first page of the unfiltered list.
            "prepend_new": page.number == 1 and not applied,
            "live_config": {
                "socket": f"/ws/runs/?workspace={workspace.slug}",
                "row_url": reverse("runs:row", args=["RUN_ID"]) + (f"?{urlencode(applied)}" if applied else ""),
                # the pager follows the count the rows come with
                "page": page.number,
                "page_size": PAGE_SIZE,
            },
        },
    )


@login_required
def run_row(request: HttpRequest, run_id: str) -> HttpResponse:
    """One row of the runs list, re-rendered when the list's socket says the run changed."""
    workspace = current_workspace(request)
    run = get_object_or_404(
        with_judge_verdict(Run.objects.for_workspace(workspace).select_related("batch_item__batch")), public_id=run_id
    )
    response = render(request, "runs/_row.html", {"run": run})
    # The list's count as it is now, under the list's own filters (sent back in the query): the heading follows it.
    listed = filtered_runs(workspace, request.GET)[0]
    response["X-Runs-Count"] = str(listed.count())
    # Where the row stands in the list's order (newest first, by created_at then id): a list that adds rows live puts
    # it there, or leaves it out when it belongs to a later page (a run that changes far down the list, or a row the
    # page just pushed off while its refresh was on the way).
    newer = listed.filter(Q(created_at__gt=run.created_at) | Q(created_at=run.created_at, pk__gt=run.pk))
    response["X-Runs-Position"] = str(newer.count())
    return response


# --- the run page ----------------------------------------------------------------------------------------------------


def run_outcome(run: Run) -> Outcome | None:
    """The outcome rubric the run is evaluated against, or None."""
    try:
        return run.outcome
    except ObjectDoesNotExist:
        return None


def summary_context(run: Run) -> dict[str, Any]:
    """Everything on the run page outside the timeline: verdict, data, judgments, evaluations, signals, usage."""
    run.refresh_from_db()
    # Judgment's own ordering puts the latest first.
    judgments = list(run.judgments.all())
    outcome = run_outcome(run)
    return {
        "run": run,
        "judge_state": presenters.judge_state(run, bool(judgments)),
        "signal_rows": presenters.signal_rows(run.signals or {}, run),
        "data_json": json.dumps(run.data, indent=2, ensure_ascii=False) if run.data is not None else "",
        "data_tree": presenters.tree(run.data) if run.data is not None else None,
        "data_tables": presenters.tables(run.data),
        "violations": presenters.violations(list(run.events.filter(type="agent.tool_result").order_by("seq"))),
        "judgments": judgments,
        "outcome": outcome,
        "evaluations": list(outcome.evaluations.all()) if outcome else [],
        "usage_sources": usage_by(ModelRequest.objects.filter(run=run), "source"),
        "is_replay": Replay.objects.filter(run=run).exists(),
        "signals": run.signals or {},
        "judge_context_slots": JUDGE_CONTEXT_SLOTS,
        "has_trace": run.is_finished and has_trace(run.public_id),
    }


@login_required
def run_trace(request: HttpRequest, run_id: str) -> FileResponse:
    """The run's Playwright trace (secrets masked), for `playwright show-trace` or trace.playwright.dev."""
    run = run_for_user(request.user, run_id)
    return serve_stored_file(
        trace_path(run.public_id),
        content_type="application/zip",
        missing="This run kept no trace.",
        download_name=f"{run.public_id}-trace.zip",
    )


@login_required
def run_file(request: HttpRequest, run_id: str, file_id: str) -> FileResponse:
    """One of the run's files as a download (the API's attachment: sanitized name, nosniff); a file of another
    run or workspace is 404."""
    run = run_for_user(request.user, run_id)
    row = next((candidate for candidate in files_of_run(run) if candidate.public_id == file_id), None)
    if row is None:
        raise Http404("No such file in this run.")
    return attachment(row)


@login_required
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id)
    events = list(run.events.order_by("seq"))
    screenshots = presenters.screenshots(events)
    context = summary_context(run)
    turns = presenters.turn_budget(run, events)
    context.update(
        {
            "workspace": run.workspace,
            "timeline": presenters.timeline(events),
            "model_deprecation": next((e.payload for e in events if e.type == event_types.MODEL_DEPRECATED.name), None),
            "replay_steps": presenters.replay_steps(events),
            "last_seq": events[-1].seq if events else 0,
            "screenshots": screenshots,
            "latest_screenshot": screenshots[-1] if screenshots else None,
            "turns": turns,
            "budget_percent": presenters.percent_of(turns, run.max_turns),
            "cost_percent": presenters.percent_of(run.cost_usd, run.max_cost_usd),
            "session_runs": run.session.runs.count(),
            "run_files": files_of_run(run),
            "replay": Replay.objects.filter(run=run).select_related("recipe", "version").first(),
            **person_context(run),
            "live_config": {
                "socket": f"/ws/runs/{run.public_id}/",
                "last_seq": events[-1].seq if events else 0,
                "max_turns": run.max_turns,
                "max_cost_usd": str(run.max_cost_usd) if run.max_cost_usd is not None else None,
                "turns": turns,
                "finished": run.is_finished,
                "summary_url": reverse("runs:summary", args=[run.public_id]),
                "live_socket": f"/ws/runs/{run.public_id}/live/",
                "panels_url": reverse("runs:panels", args=[run.public_id]),
                # what the page's scripts follow, from the registry (runs.event_types)
                "event_types": {
                    "drawn": sorted(event_types.DRAWN),
                    "summary": sorted(event_types.following(event_types.Follow.SUMMARY)),
                    "panels": sorted(event_types.following(event_types.Follow.PANELS)),
                },
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


def person_context(run: Run) -> dict[str, Any]:
    """What the run page's person card shows: the agent's pending question, and whether a person has control (while
    the agent is paused, and for the whole of a running sign-in by hand, which has no agent)."""
    context = {"pending_input": human.pending_input(run), "paused": run.is_paused, "in_control": run.accepts_control}
    if run.kind == Run.Kind.SIGN_IN and not run.is_finished:
        # what Save would store, as the sign-in's worker last read it from the live browser
        shown = run.events.filter(type="sign_in.state").order_by("-seq").first()
        if shown is not None:
            context["sign_in_state"] = {**shown.payload, "save_stores": what_save_stores(shown.payload)}
    return context


def operator_name(request: HttpRequest) -> str:
    return str(request.user.get_username())


@login_required
def run_panels(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run page's panels that follow its state (the header's actions, the person card, the files, the follow-up
    card), re-rendered together when the live viewer sees an event that changes one of them."""
    run = run_for_user(request.user, run_id)
    return render(request, "runs/_panels.html", {"run": run, "run_files": files_of_run(run), **person_context(run)})


def person_action(request: HttpRequest, run_id: str, act: Any, done: str) -> HttpResponse:
    """One of a member's person-in-the-loop actions from the run page; a refusal is shown, never a traceback."""
    run = run_for_user(request.user, run_id)
    try:
        act(run, operator_name(request))
    except ServiceError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, done, extra_tags="finished")
    return redirect("runs:detail", run.public_id)


@login_required
@require_POST
def run_answer(request: HttpRequest, run_id: str) -> HttpResponse:
    return person_action(
        request,
        run_id,
        lambda run, by: human.answer_input(run, request.POST.get("id", ""), request.POST.get("text", ""), by=by),
        "Answer sent to the agent.",
    )


@login_required
@require_POST
def run_pause(request: HttpRequest, run_id: str) -> HttpResponse:
    return person_action(
        request,
        run_id,
        lambda run, by: human.pause(run, by=by),
        "You have control: the agent stops before its next request. Use the live view, then hand back.",
    )


@login_required
@require_POST
def run_resume(request: HttpRequest, run_id: str) -> HttpResponse:
    return person_action(
        request,
        run_id,
        lambda run, by: human.resume(run, by=by, note=request.POST.get("note", "")),
        "Handed back to the agent.",
    )


@login_required
@require_POST
def run_message(request: HttpRequest, run_id: str) -> HttpResponse:
    return person_action(
        request,
        run_id,
        lambda run, by: human.queue_message(run, request.POST.get("text", ""), by=by),
        "Message queued: the agent reads it with its next request.",
    )


@login_required
def run_summary(request: HttpRequest, run_id: str) -> HttpResponse:
    """The run page's result panels, re-rendered when the live viewer sees the run finish or get judged."""
    run = run_for_user(request.user, run_id)
    return render(request, "runs/_summary.html", summary_context(run))


@login_required
@require_POST
def run_cancel(request: HttpRequest, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id)
    if run.is_finished:
        messages.info(request, f"{run.public_id} had already finished.")
    else:
        request_cancel(run)
        # Tagged so the run page drops it once the run has ended (it would read as still pending otherwise).
        messages.success(
            request, f"Cancel requested for {run.public_id}; it stops at its next safe point.", extra_tags="finished"
        )
    return redirect("runs:detail", run.public_id)


@login_required
def screenshot(request: HttpRequest, run_id: str, name: str) -> FileResponse:
    run = run_for_user(request.user, run_id)
    path = storage_path(run.public_id, name)
    if path is None:
        raise Http404("No such screenshot.")
    # A screenshot never changes once stored (its name is new each time): the browser may keep it for a day.
    return serve_stored_file(
        path, content_type=content_type(name), missing="No such screenshot.", cache_control="private, max-age=86400"
    )


# --- launching -------------------------------------------------------------------------------------------------------


def model_choices() -> tuple[list[dict[str, Any]], str | None]:
    """The active models the launch form offers (with each one's effort levels and thinking modes), or, when the
    Models API cannot be asked, no choices and the reason (the form then takes a model id as text)."""
    try:
        lineup = llm.active_models()
    except llm.ProfilesUnavailable as error:
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
def run_new(request: OperatorRequest) -> HttpResponse:
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
            arguments = launch_arguments(request.POST)
            if request.FILES.getlist("files"):
                # uploaded first, as through the API: a launch the form then refuses leaves them in the workspace
                arguments["file_ids"] = [
                    row.public_id for row in upload_files(workspace, request.FILES.getlist("files"))
                ]
            launched = launch(workspace, LaunchRequest.of(arguments, created_by=request.user))
        except ServiceError as launch_error:
            error = launch_error
        else:
            return redirect("runs:detail", launched.run.public_id)
    values: Mapping[str, Any]
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
            "proxies": Proxy.objects.for_workspace(workspace).usable(),
            "session_schema_json": json.dumps(session.output_schema, indent=2)
            if session and session.output_schema
            else "",
            "values": values,
            "error": error,
            "judge_context": judge_context + [""] * (len(JUDGE_CONTEXT_SLOTS) - len(judge_context)),
            "demo_tasks": demo_tasks(workspace),
            "max_turns_default": settings.RUN_DEFAULT_MAX_TURNS,
            "default_model": settings.DEFAULT_MODEL,
            "models": models,
            "models_unavailable": models_unavailable,
            # A follow-up continues its session's browser: only a session's first run starts from a profile.
            "profiles": [] if session else list(Profile.objects.for_workspace(workspace).order_by("name")),
            "save_profile_checked": request.method != "POST" or bool(request.POST.get("save_profile")),
            "effort_levels": ["low", "medium", "high", "xhigh", "max"],
            "thinking_modes": ["adaptive", "between_tools", "disabled"],
            "max_turns_limit": MAX_TURNS_LIMIT,
            "schema_max_bytes": SCHEMA_MAX_BYTES,
            "file_max_bytes": settings.FILE_UPLOAD_MAX_BYTES,
            "launch_config": {
                "lint_url": reverse("runs:schema_lint") + (f"?session={session.public_id}" if session else ""),
                "max_bytes": SCHEMA_MAX_BYTES,
                "allowed": sorted(ALLOWED_KEYWORDS),
                "session_schema": session.output_schema if session else None,
                "in_session": session is not None,
                "presets": demo_tasks(workspace),
                "models": models,
            },
        },
        # A refused launch answers with the status the API would give it.
        status=error.status if error else 200,
    )


def follow_up_values(session: Session | None, query: QueryDict) -> tuple[dict[str, Any], list[str]]:
    """What the launch form starts with: for a follow-up, the session's latest run's settings (model, turns, judge
    and its context, as the quick follow-up inherits them), overridden by what the link carries (the quick box's
    task when the operator asks for more options)."""
    values: dict[str, Any] = {}
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
def schema_lint(request: HttpRequest) -> JsonResponse:
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
    problems = [problem.as_dict() for problem in schema_problems(schema)]
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
def session_list(request: HttpRequest) -> HttpResponse:
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
def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_for_user(request.user, session_id)
    runs = with_judge_verdict(session.runs.select_related("session", "batch_item__batch")).order_by("created_at", "id")
    return render(
        request,
        "runs/session.html",
        {
            "workspace": session.workspace,
            "session": session,
            "runs": runs,
            "schema_json": json.dumps(session.output_schema, indent=2) if session.output_schema else "",
            "share": SessionShare.objects.filter(session=session).first(),
        },
    )
