"""Operator pages of suites: import a file, browse its tasks and retire them, launch a batch over it, its
leaderboard with the agreement with people; and the random-sample triage, where a person labels runs."""

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace
from agent_platform.errors import InvalidRequest, ServiceError
from runs.launch_rules import EFFORT_LEVELS
from runs.models import Run
from runs.views import model_choices

from . import labels, reports, services, suites
from . import leaderboard as boards
from .models import JudgeMode, Suite
from .views import configs_from_form, form_int

CONFIG_ROWS = 3
SAMPLE_SIZE = 10


def find_suite(request: OperatorRequest, suite_id: str) -> Suite:
    suite = Suite.objects.filter(workspace=current_workspace(request), public_id=suite_id).first()
    if suite is None:
        raise Http404("No such suite.")
    return suite


@login_required
def suite_list(request: OperatorRequest) -> HttpResponse:
    """The workspace's suites, and the import form (a file in one of the formats, WebArena's site addresses)."""
    workspace = current_workspace(request)
    error: ServiceError | None = None
    if request.method == "POST":
        try:
            upload = request.FILES.get("file")
            if upload is None:
                raise InvalidRequest.of_field("file", "choose the suite's file")
            sites: Any = None
            if request.POST.get("sites", "").strip():
                try:
                    sites = json.loads(request.POST["sites"])
                except ValueError as problem:
                    raise InvalidRequest.of_field("sites", f"is not JSON: {problem}") from None
            result = suites.import_suite(
                workspace,
                format=request.POST.get("format", ""),
                content=upload.read(suites.SUITE_FILE_MAX_BYTES + 1),
                name=request.POST.get("name", ""),
                sites=sites,
                judge_mode=request.POST.get("judge_mode") or None,
                created_by=request.user,
            )
        except ServiceError as refusal:
            error = refusal
        else:
            skipped = len(result.skipped)
            messages.success(
                request,
                f"Imported {result.suite.tasks.count()} tasks" + (f"; {skipped} skipped" if skipped else "") + ".",
            )
            for entry in result.skipped[:20]:
                messages.warning(request, f"Line {entry.line} ({entry.external_id}) skipped: {entry.reason}")
            return redirect("evals:suite", result.suite.public_id)
    return render(
        request,
        "evals/suites.html",
        {
            "workspace": workspace,
            "suites": Suite.objects.filter(workspace=workspace)[:100],
            "formats": Suite.Format.choices,
            "modes": JudgeMode.choices,
            "error": error,
            "values": request.POST,
        },
        status=error.status if error else 200,
    )


@login_required
def suite_detail(request: OperatorRequest, suite_id: str) -> HttpResponse:
    """A suite's tasks, and the form that launches a batch over those not retired."""
    suite = find_suite(request, suite_id)
    error: ServiceError | None = None
    if request.method == "POST":
        try:
            configs = configs_from_form(request.POST)
            for config, thinking in zip(configs, request.POST.getlist("config_thinking"), strict=False):
                if thinking.strip():
                    config["thinking"] = thinking.strip()
            batch = services.launch_suite(
                suite,
                name=request.POST.get("name", ""),
                configs=configs,
                repeats=form_int(request.POST, "repeats"),
                concurrency=form_int(request.POST, "concurrency"),
                judge=request.POST.get("judge") == "on",
                judge_mode=request.POST.get("judge_mode") or None,
                created_by=request.user,
            )
        except ServiceError as refusal:
            error = refusal
        else:
            return redirect("evals:detail", batch.public_id)
    return render(
        request,
        "evals/suite.html",
        {
            "workspace": suite.workspace,
            "suite": suite,
            "tasks": suite.tasks.all(),
            "batches": suite.batches.all()[:20],
            "config_rows": range(CONFIG_ROWS),
            "efforts": list(EFFORT_LEVELS),
            "models": model_choices()[0],
            "modes": JudgeMode.choices,
            "error": error,
            "values": request.POST,
        },
        status=error.status if error else 200,
    )


@login_required
@require_POST
def suite_task_stale(request: OperatorRequest, suite_id: str, external_id: str) -> HttpResponse:
    suite = find_suite(request, suite_id)
    task = suite.tasks.filter(external_id=external_id).first()
    if task is None:
        raise Http404("No such task.")
    suites.set_stale(task, request.POST.get("stale") == "1")
    return redirect("evals:suite", suite.public_id)


@login_required
def suite_leaderboard(request: OperatorRequest, suite_id: str) -> HttpResponse:
    suite = find_suite(request, suite_id)
    raters, _ = boards.agreement_report(suite.workspace, suite)
    return render(
        request,
        "evals/leaderboard.html",
        {"workspace": suite.workspace, "suite": suite, "rows": boards.leaderboard(suite), "raters": raters},
    )


@login_required
def triage_sample(request: OperatorRequest) -> HttpResponse:
    """A random sample of judged runs nobody labelled yet, each with buttons to say whether it really succeeded."""
    workspace = current_workspace(request)
    seed = request.GET.get("seed") or None
    runs = labels.random_sample(workspace, size=SAMPLE_SIZE, seed=seed)
    verdicts = {j.run_id: j for j in reports.latest_judgments(workspace).filter(run__in=[run.pk for run in runs])}
    items = [
        {"run": run, "judgment": verdicts.get(run.pk), "screenshot_url": reports.final_screenshot_url(run)}
        for run in runs
    ]
    return render(request, "evals/sample.html", {"workspace": workspace, "items": items, "seed": seed or ""})


@login_required
@require_POST
def label_run(request: OperatorRequest, run_id: str) -> HttpResponse:
    workspace = current_workspace(request)
    run = Run.objects.for_workspace(workspace).filter(public_id=run_id).first()
    if run is None:
        raise Http404("No such run.")
    services.record_label(
        workspace,
        run,
        success=request.POST.get("success") == "1",
        note=request.POST.get("note", "")[: services.NOTE_MAX_CHARS],
        recorded_by=request.user,
    )
    messages.success(request, f"Labelled {run.public_id}.")
    seed = request.POST.get("seed", "")
    return redirect(reverse("evals:sample") + (f"?{urlencode({'seed': seed})}" if seed else ""))
