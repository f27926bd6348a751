"""The judge's operator page action: ask for another judgment of a run from its page (with edited judge_context)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest
from agent_platform.errors import ServiceError
from runs.forms import judge_context_from
from runs.views import run_for_user

from .services import request_rejudge


@login_required
@require_POST
def run_rejudge(request: OperatorRequest, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id)
    try:
        request_rejudge(run, judge_context=judge_context_from(request.POST), requested_by=request.user)
    except ServiceError as error:
        messages.error(request, error.message)
    else:
        # Tagged so the run page drops it once the judgment arrives (it would read as still pending otherwise).
        messages.success(
            request, "A new judgment was requested; it appears here when the judge is done.", extra_tags="judged"
        )
    return redirect(reverse("runs:detail", args=[run.public_id]) + "#judgments")
