"""Operator pages of the platform: choosing a workspace; settings and usage pages are added beside it."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from .access import choose_workspace


@login_required
@require_POST
def choose(request, slug: str):
    choose_workspace(request, slug)
    return redirect("runs:list")
