"""The recipe pages: the workspace's recipes; one recipe with its steps as readable lines, its parameters (editable),
its versions (a proposed one accepted or declined) and the runs made from it; and the run page's Make recipe."""

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace
from agent_platform.errors import InvalidRequest, ServiceError
from agent_platform.models import Workspace
from runs.launch_rules import LaunchRequest
from runs.views import run_for_user

from . import services
from .models import Recipe
from .reading import recipe_out

RECIPES_SHOWN = 100


def list_page(request: OperatorRequest, workspace: Workspace, error: ServiceError | None = None) -> HttpResponse:
    recipes = [recipe_out(recipe) for recipe in Recipe.objects.for_workspace(workspace)[:RECIPES_SHOWN]]
    context = {"workspace": workspace, "recipes": recipes, "error": error}
    return render(request, "recipes/list.html", context, status=error.status if error else 200)


def find(request: OperatorRequest, recipe_id: str) -> Recipe:
    recipe = Recipe.objects.for_workspace(current_workspace(request)).filter(public_id=recipe_id).first()
    if recipe is None:
        raise Http404("No such recipe in this workspace.")
    return recipe


def detail_page(request: OperatorRequest, recipe: Recipe, error: ServiceError | None = None) -> HttpResponse:
    context = {"workspace": recipe.workspace, "recipe": recipe_out(recipe), "error": error}
    return render(request, "recipes/detail.html", context, status=error.status if error else 200)


@login_required
def recipe_list(request: OperatorRequest) -> HttpResponse:
    return list_page(request, current_workspace(request))


@login_required
def recipe_detail(request: OperatorRequest, recipe_id: str) -> HttpResponse:
    return detail_page(request, find(request, recipe_id))


def marked_parameters(text: str) -> dict[str, str]:
    """The run page's parameters box: one `name = value as the run typed it` a line."""
    marked = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        if not equals:
            raise InvalidRequest.of_field("parameters", f"line {number} is not `name = value`")
        marked[name.strip()] = value.strip()
    return marked


@login_required
@require_POST
def recipe_make(request: OperatorRequest, run_id: str) -> HttpResponse:
    run = run_for_user(request.user, run_id)
    try:
        recipe = services.make_recipe(
            run,
            name=request.POST.get("name") or None,
            parameters=marked_parameters(request.POST.get("parameters", "")),
            created_by=request.user,
        )
    except ServiceError as error:
        return list_page(request, run.workspace, error)
    return redirect("recipes:detail", recipe.public_id)


def values_of(form: QueryDict, prefix: str) -> dict[str, Any]:
    return {key.removeprefix(prefix): value for key, value in form.items() if key.startswith(prefix)}


@login_required
@require_POST
def recipe_update(request: OperatorRequest, recipe_id: str) -> HttpResponse:
    recipe = find(request, recipe_id)
    try:
        services.update(
            recipe,
            auto_accept=request.POST.get("auto_accept") == "on",
            parameters=values_of(request.POST, "param-"),
        )
    except ServiceError as error:
        return detail_page(request, recipe, error)
    return redirect("recipes:detail", recipe.public_id)


@login_required
@require_POST
def version_decide(request: OperatorRequest, recipe_id: str, number: int) -> HttpResponse:
    recipe = find(request, recipe_id)
    try:
        services.decide(recipe, number, accept=request.POST.get("decision") == "accept")
    except ServiceError as error:
        return detail_page(request, recipe, error)
    return redirect("recipes:detail", recipe.public_id)


@login_required
@require_POST
def recipe_replay(request: OperatorRequest, recipe_id: str) -> HttpResponse:
    recipe = find(request, recipe_id)
    try:
        launched = services.launch_replay(
            recipe.workspace,
            LaunchRequest(created_by=request.user),
            recipe_id=recipe.public_id,
            parameters=values_of(request.POST, "param-"),
        )
    except ServiceError as error:
        return detail_page(request, recipe, error)
    return redirect("runs:detail", launched.run.public_id)
