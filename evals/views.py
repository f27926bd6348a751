"""Operator pages of evaluations: batches (list, launch form, statistics), the triage queue."""

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import OuterRef, Subquery
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace
from agent_platform.errors import InvalidRequest, ServiceError
from judge.models import Judgment
from runs.launch_rules import EFFORT_LEVELS, MAX_TURNS_LIMIT
from runs.schema import ALLOWED_KEYWORDS, SCHEMA_MAX_BYTES
from runs.views import model_choices

from . import reports, services, stats
from .models import Batch, Truth

CONFIG_ROWS = 3
TRIAGE_PAGE = 20
BATCH_RUNS_PAGE = 50
CELL_LABELS = {
    stats.SUCCESS_PASS: "success + pass",
    stats.OVERCLAIM: "success + fail (overclaim)",
    stats.UNDERCLAIM: "failure + pass (underclaim)",
    stats.FAILURE_FAIL: "failure + fail",
    stats.UNCERTAIN: "uncertain",
    stats.BLOCKED_OR_IMPOSSIBLE: "blocked / impossible",
}


def find_batch(request: OperatorRequest, batch_id: str) -> Batch:
    batch = Batch.objects.for_workspace(current_workspace(request)).filter(public_id=batch_id).first()
    if batch is None:
        raise Http404("No such batch.")
    return batch


@login_required
def batch_list(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    page = Paginator(Batch.objects.for_workspace(workspace), 25).get_page(request.GET.get("page"))
    return render(request, "evals/list.html", {"workspace": workspace, "page": page, "batches": page.object_list})


def configs_from_form(post: QueryDict) -> list[dict[str, Any]]:
    """Configuration rows of the form; the first is always kept (the defaults), the others when anything is set."""
    models, efforts, turns = (post.getlist(name) for name in ("config_model", "config_effort", "config_max_turns"))
    configs = []
    for index in range(max(len(models), len(efforts), len(turns), 1)):
        model = (models[index] if index < len(models) else "").strip()
        effort = (efforts[index] if index < len(efforts) else "").strip()
        max_turns = (turns[index] if index < len(turns) else "").strip()
        if index > 0 and not (model or effort or max_turns):
            continue
        config: dict[str, Any] = {}
        if model:
            config["model"] = model
        if effort:
            config["effort"] = effort
        if max_turns:
            config["max_turns"] = int(max_turns) if max_turns.lstrip("-").isdigit() else max_turns
        configs.append(config)
    return configs


def tasks_from_form(request: HttpRequest) -> list[Any]:
    upload = request.FILES.get("suite")
    if upload is not None:
        return services.parse_suite(upload.read(services.SUITE_MAX_BYTES + 1), upload.name or "")
    item: dict[str, Any] = {"task": request.POST.get("task", "")}
    if request.POST.get("start_url", "").strip():
        item["start_url"] = request.POST["start_url"]
    statements = [line for line in request.POST.get("judge_context", "").splitlines() if line.strip()]
    if statements:
        item["judge_context"] = statements
    for name in ("output_schema", "expected"):
        text = request.POST.get(name, "").strip()
        if text:
            try:
                item[name] = json.loads(text)
            except ValueError as error:
                raise InvalidRequest.of_field(name, f"is not JSON: {error}") from None
    return [item]


def form_int(post: QueryDict, name: str) -> int | str | None:
    value = post.get(name, "").strip()
    if not value:
        return None
    return int(value) if value.lstrip("-").isdigit() else value


@login_required
def batch_new(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    error: ServiceError | None = None
    if request.method == "POST":
        try:
            batch = services.create_batch(
                workspace,
                name=request.POST.get("name", ""),
                tasks=tasks_from_form(request),
                configs=configs_from_form(request.POST),
                repeats=form_int(request.POST, "repeats"),
                concurrency=form_int(request.POST, "concurrency"),
                judge=request.POST.get("judge") == "on",
                pass_k=form_int(request.POST, "pass_k"),
                created_by=request.user,
            )
        except ServiceError as refusal:
            error = refusal
        else:
            return redirect("evals:detail", batch.public_id)
    models = model_choices()[0]
    return render(
        request,
        "evals/new.html",
        {
            "workspace": workspace,
            "error": error,
            "values": request.POST,
            "config_rows": range(CONFIG_ROWS),
            "efforts": list(EFFORT_LEVELS),
            # The active models, as the run form offers them; without the Models API, a model id typed as text.
            "models": models,
            # The run form's schema lint, on the batch's schema field: the same rules, every problem at once.
            "launch_config": {
                "lint_url": reverse("runs:schema_lint"),
                "max_bytes": SCHEMA_MAX_BYTES,
                "allowed": sorted(ALLOWED_KEYWORDS),
                "session_schema": None,
                "in_session": False,
                "presets": [],
                "models": models,
            },
            "max_turns_default": settings.RUN_DEFAULT_MAX_TURNS,
            "max_turns_limit": MAX_TURNS_LIMIT,
        },
        status=error.status if error else 200,
    )


@login_required
def batch_detail(request: OperatorRequest, batch_id: str) -> HttpResponse:
    batch = find_batch(request, batch_id)
    round_text = request.GET.get("round")
    round_number = int(round_text) if round_text and round_text.isdigit() else None
    report = reports.batch_report(batch, round_number)
    rows = []
    for group in report.groups:
        before = report.pass_at_1_before.get((group.task.pk, group.config.pk))
        scoring = group.stats.scoring
        rows.append(
            {
                "group": group,
                "s": group.stats,
                "pass_at_k": group.stats.pass_at_k.get(batch.pass_k),
                "before": before,
                # A list, not the dict: a template reads `fields.items` as the key "items" when the expected data
                # has a field of that name (and keys, values likewise), so field names never meet a dict lookup.
                "field_rates": list(scoring.fields.items()) if scoring else [],
            }
        )
    matrix = [{"key": key, "label": CELL_LABELS[key], "count": report.matrix[key]} for key in stats.CELLS]
    latest_verdict = Judgment.objects.filter(run_id=OuterRef("run_id")).order_by("-judged_at", "-id")
    items = (
        batch.items.select_related("task", "config", "run")
        .annotate(judge_verdict=Subquery(latest_verdict.values("verdict")[:1]))
        .order_by("task__position", "config__position", "repeat")
    )
    return render(
        request,
        "evals/detail.html",
        {
            "workspace": batch.workspace,
            "batch": batch,
            "report": report,
            "rows": rows,
            "matrix": matrix,
            "run_ids": batch.items.filter(run__isnull=False).values_list("run__public_id", flat=True),
            "runs_page": Paginator(items, BATCH_RUNS_PAGE).get_page(request.GET.get("runs_page")),
            # The page re-reads itself when the workspace socket says one of its runs, or the batch, changed.
            "live_config": {"socket": f"/ws/runs/?workspace={batch.workspace.slug}", "batch_id": batch.public_id},
        },
    )


@login_required
@require_POST
def batch_cancel(request: OperatorRequest, batch_id: str) -> HttpResponse:
    batch = services.cancel_batch(find_batch(request, batch_id))
    messages.success(request, f"Batch {batch.public_id} is cancelled; no more of its runs launch.")
    return redirect("evals:detail", batch.public_id)


@login_required
@require_POST
def batch_rejudge(request: OperatorRequest, batch_id: str) -> HttpResponse:
    batch = find_batch(request, batch_id)
    statements = [line for line in request.POST.get("judge_context", "").splitlines() if line.strip()]
    try:
        round_ = services.rejudge_batch(
            batch,
            judge_context=statements or None,
            judge_model=request.POST.get("judge_model", "").strip() or None,
            requested_by=request.user,
        )
    except ServiceError as error:
        messages.error(request, error.message)
        return redirect("evals:detail", batch.public_id)
    messages.success(request, f"Judging round {round_.number} started; its numbers fill in as the judge answers.")
    return redirect("evals:detail", batch.public_id)


@login_required
def triage(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    kind = request.GET.get("kind") if request.GET.get("kind") in reports.TRIAGE_KINDS else None
    include_resolved = request.GET.get("resolved") == "1"
    queue = reports.triage_queue(workspace, kind=kind, include_resolved=include_resolved)
    page = Paginator(queue, TRIAGE_PAGE).get_page(request.GET.get("page"))
    items = [
        {
            "judgment": judgment,
            "run": judgment.run,
            "kind": reports.kind_of(judgment),
            "screenshot_url": reports.final_screenshot_url(judgment.run),
            "data_json": json.dumps(judgment.run.data, indent=2, ensure_ascii=False)
            if judgment.run.data is not None
            else "",
            "truth": getattr(judgment, "truth", None),
        }
        for judgment in page.object_list
    ]
    return render(
        request,
        "evals/triage.html",
        {
            "workspace": workspace,
            "items": items,
            "page": page,
            "kind": kind or "",
            "include_resolved": include_resolved,
            "truths": Truth.Value.choices,
        },
    )


@login_required
@require_POST
def record_truth(request: OperatorRequest, judgment_id: str) -> HttpResponse:
    workspace = current_workspace(request)
    # A str route (not int), so every operator route resolves for the access checks; ids are digits.
    if not judgment_id.isdigit() or len(judgment_id) > 18:
        raise Http404("No such judgment.")
    judgment = Judgment.objects.filter(pk=int(judgment_id), run__workspace=workspace).first()
    if judgment is None:
        raise Http404("No such judgment.")
    try:
        services.record_truth(
            workspace,
            judgment,
            value=request.POST.get("truth", ""),
            note=request.POST.get("note", ""),
            recorded_by=request.user,
        )
    except ServiceError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Truth recorded for {judgment.run.public_id}.")
    next_url = request.POST.get("next", "")
    return redirect(next_url if next_url.startswith("/triage/") else "evals:triage")
