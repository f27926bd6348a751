"""Recipes' actions: make one from a succeeded run, launch a replay of it, propose a healed run's steps as its next
version and accept or decline it, and account what a replay saved."""

import hashlib
from dataclasses import replace
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from agent_platform.errors import Conflict, InvalidRequest, NotFound
from agent_platform.models import Workspace
from runs.launch import Launched, launch
from runs.launch_rules import LaunchRequest, invalid
from runs.models import Event, Run

from . import steps as recipe_steps
from .models import Recipe, RecipeVersion, Replay

NAME_MAX_CHARS = 200


def text_hash(text: str) -> str:
    """What a replay compares its last page's text with the source run's by (runs.recipes.models: last_done)."""
    return hashlib.sha256(text.strip().encode()).hexdigest()[:32]


def last_done_of(run: Run) -> dict[str, Any]:
    """The run's verdict and a hash of its last page's text (the agent.final_view it ended on)."""
    view = Event.objects.filter(run=run, type="agent.final_view").order_by("-seq").first()
    text = str(view.payload.get("text") or "") if view is not None else ""
    return {"output": run.output, "data": run.data, "text_hash": text_hash(text) if text else ""}


def clean_parameters(given: object) -> dict[str, str]:
    """Values of the source run an operator marks as parameters: {name: the value as the run typed it}."""
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise invalid("parameters", "must be an object {name: value as the run typed it}")
    if len(given) > recipe_steps.PARAMETERS_MAX:
        raise invalid("parameters", f"has more than {recipe_steps.PARAMETERS_MAX} parameters")
    cleaned = {}
    for name, value in given.items():
        if not recipe_steps.PARAMETER_NAME.match(str(name)):
            raise invalid(f"parameters.{str(name)[:40]}", "names must be lowercase letters, digits and _ (at most 40)")
        if not isinstance(value, str) or not value.strip() or len(value) > recipe_steps.PARAMETER_VALUE_MAX_CHARS:
            raise invalid(
                f"parameters.{name}", f"must be 1 to {recipe_steps.PARAMETER_VALUE_MAX_CHARS} characters of text"
            )
        cleaned[name] = value
    return cleaned


@transaction.atomic
def make_recipe(run: Run, *, name: object = None, parameters: object = None, created_by: User | None = None) -> Recipe:
    """A recipe (version 1) of a succeeded run's browser steps. Raises Conflict for a run that did not succeed,
    InvalidRequest for parameters no step types, or for an action a replay could not find its element for."""
    if run.status != Run.Status.SUCCEEDED or run.success is not True:
        raise Conflict(
            f"run {run.public_id} did not succeed (status {run.status}): a recipe is made from a run that succeeded",
            field="run_id",
        )
    if name is not None and (not isinstance(name, str) or len(name) > NAME_MAX_CHARS):
        raise invalid("name", f"must be text of at most {NAME_MAX_CHARS} characters")
    marked = clean_parameters(parameters)
    try:
        steps = recipe_steps.steps_of(Event.objects.filter(run=run).order_by("seq"), marked)
    except recipe_steps.NotReplayable as error:
        raise InvalidRequest(f"run_id: run {run.public_id} cannot be replayed: {error}", field="run_id") from None
    if not steps:
        raise InvalidRequest(f"run_id: run {run.public_id} has no browser action a recipe can replay", field="run_id")
    used = set().union(*(recipe_steps.parameters_in(step.get("value")) for step in steps))
    for parameter in marked:
        if parameter not in used:
            raise invalid(f"parameters.{parameter}", "its value is typed by none of the run's steps")
    recipe = Recipe.objects.create(
        workspace=run.workspace,
        name=(name or "").strip() or run.task.strip().splitlines()[0][:NAME_MAX_CHARS],
        task=recipe_steps.parameterize(run.task, marked),
        start_url=run.start_url,
        output_schema=run.session.output_schema,
        source_run=run,
        created_by=created_by,
    )
    RecipeVersion.objects.create(
        recipe=recipe,
        number=1,
        steps=steps,
        parameters=[{"name": parameter, "default": value} for parameter, value in marked.items()],
        source_run=run,
        source_cost_usd=run.cost_usd,
        last_done=last_done_of(run),
    )
    return recipe


def find_recipe(workspace: Workspace, recipe_id: object, field: str = "recipe_id") -> Recipe:
    if not isinstance(recipe_id, str):
        raise invalid(field, "must be a string")
    recipe = Recipe.objects.for_workspace(workspace).filter(public_id=recipe_id).first()
    if recipe is None:
        raise invalid(field, f"no recipe '{recipe_id[:60]}' in this workspace (GET /api/v1/recipes lists them)")
    return recipe


def replay_parameters(version: RecipeVersion, given: object) -> dict[str, str]:
    """A replay's values for the version's parameters: those given, the defaults for the rest."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise invalid("parameters", "must be an object {name: value}")
    known = {str(parameter["name"]): str(parameter.get("default") or "") for parameter in version.parameters}
    for name, value in given.items():
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise invalid(f"parameters.{str(name)[:40]}", f"is not a parameter of this recipe (it has: {listed})")
        if not isinstance(value, str) or len(value) > recipe_steps.PARAMETER_VALUE_MAX_CHARS:
            raise invalid(f"parameters.{name}", f"must be text of at most {recipe_steps.PARAMETER_VALUE_MAX_CHARS}")
    return {**known, **given}


def replay_request(
    workspace: Workspace, request: LaunchRequest, *, recipe_id: object, parameters: object
) -> tuple[LaunchRequest, RecipeVersion, dict[str, str]]:
    """The launch a replay of the recipe's current version makes: its task, start URL and output schema are the
    recipe's, the other launch fields the caller's; with the version replayed and its parameters' values."""
    recipe = find_recipe(workspace, recipe_id)
    for field in ("task", "start_url", "output_schema"):
        if getattr(request, field) is not None:
            raise invalid(field, f"a replay's {field} is its recipe's: leave it out with recipe_id")
    if request.session_id is not None:
        raise invalid("session_id", "a replay starts a session of its own: leave it out with recipe_id")
    version = recipe.current()
    values = replay_parameters(version, parameters)
    recipe_request = replace(
        request,
        task=recipe_steps.render(recipe.task, values),
        start_url=recipe.start_url,
        output_schema=recipe.output_schema,
    )
    return recipe_request, version, values


def launch_replay(
    workspace: Workspace, request: LaunchRequest, *, recipe_id: object, parameters: object = None
) -> Launched:
    """A run that replays the recipe's current version with `parameters` (runtime.replay), launched as runs.launch
    launches any run and raising as it does."""
    recipe_request, version, values = replay_request(workspace, request, recipe_id=recipe_id, parameters=parameters)
    needed = recipe_steps.secrets_in(version.steps)
    secrets = request.secrets
    missing = sorted(needed - set(secrets if isinstance(secrets, dict) else {}))
    if missing:
        raise invalid("secrets", f"the recipe types {', '.join(missing)}: give each in secrets")
    with transaction.atomic():  # the worker is handed the run once this commits, with its replay in place
        # a retried replay with the same key is the same recipe with the same parameters, or a conflict
        fingerprinted = {"recipe_id": version.recipe.public_id, "parameters": values}
        launched = launch(workspace, recipe_request, fingerprinted=fingerprinted)
        if not launched.replayed:
            Replay.objects.create(run=launched.run, recipe=version.recipe, version=version, parameters=values)
    return launched


def propose(run: Run) -> RecipeVersion | None:
    """A healed replay that succeeded (and passed its judge, when judged): the steps that worked (those replayed and
    the agent's after them) as the recipe's next version, accepted at once when the recipe says so. Once per run."""
    with transaction.atomic():
        replay = Replay.objects.select_for_update().filter(run=run).select_related("recipe").first()
        if replay is None or replay.healed_from_step is None or replay.proposed_version_id is not None:
            return None
        try:
            steps = recipe_steps.steps_of(Event.objects.filter(run=run).order_by("seq"), replay.parameters)
        except recipe_steps.NotReplayable:
            return None  # the agent acted on a point: no version a replay could follow
        recipe = Recipe.objects.select_for_update().get(pk=replay.recipe_id)
        number = (recipe.versions.aggregate(last=Max("number"))["last"] or 0) + 1
        version = RecipeVersion.objects.create(
            recipe=recipe,
            number=number,
            status=RecipeVersion.Status.ACCEPTED if recipe.auto_accept else RecipeVersion.Status.PROPOSED,
            steps=steps,
            parameters=replay.version.parameters,
            source_run=run,
            source_cost_usd=run.cost_usd,
            last_done=last_done_of(run),
        )
        replay.proposed_version = version
        replay.save(update_fields=["proposed_version"])
    return version


def decide(recipe: Recipe, number: int, *, accept: bool) -> RecipeVersion:
    """Accept a proposed version (replays run it from now on) or decline it. Conflict when it is not proposed."""
    version = recipe.versions.filter(number=number).first()
    if version is None:
        raise NotFound(f"recipe {recipe.public_id} has no version {number}")
    if version.status != RecipeVersion.Status.PROPOSED:
        raise Conflict(f"version {number} is {version.status}, not proposed", field="number")
    version.status = RecipeVersion.Status.ACCEPTED if accept else RecipeVersion.Status.DECLINED
    version.save(update_fields=["status"])
    return version


def update(recipe: Recipe, *, name: object = None, auto_accept: object = None, parameters: object = None) -> Recipe:
    """Rename the recipe, switch auto-accept, or change its parameters' defaults (on the current version)."""
    if name is not None:
        if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX_CHARS:
            raise invalid("name", f"must be 1 to {NAME_MAX_CHARS} characters")
        recipe.name = name.strip()
    if auto_accept is not None:
        if not isinstance(auto_accept, bool):
            raise invalid("auto_accept", "must be true or false")
        recipe.auto_accept = auto_accept
    with transaction.atomic():
        recipe.save(update_fields=["name", "auto_accept"])
        if parameters is not None:
            version = recipe.current()
            defaults = replay_parameters(version, parameters)
            version.parameters = [{"name": name, "default": value} for name, value in defaults.items()]
            version.save(update_fields=["parameters"])
    return recipe


def settle(run: Run, event_type: str) -> None:
    """A replay's end: what it saved against its version's source run; its proposal once it succeeded (and, when
    judged, once its judge passed it)."""
    replay = Replay.objects.filter(run=run).select_related("version").first()
    if replay is None:
        return
    if event_type == "run.finished":
        saved = replay.version.source_cost_usd - run.cost_usd
        Replay.objects.filter(pk=replay.pk).update(cost_saved_usd=saved)
        if run.status == Run.Status.SUCCEEDED and run.success and not run.judge:
            propose(run)
    elif event_type == "run.judged" and run.status == Run.Status.SUCCEEDED and run.success:
        judgment = run.judgments.first()
        if judgment is not None and judgment.verdict == judgment.Verdict.PASS:
            propose(run)
