"""The recipes API: make a recipe from a succeeded run, read and change it, accept or decline a healed run's
proposed version. A replay is launched with POST /api/v1/runs and recipe_id (runs/api.py)."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Path, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictStr, StringConstraints

from agent_platform.api import ERROR_RESPONSES, NOT_BLANK, ApiRequest, ErrorOut, PathId
from agent_platform.errors import NotFound
from runs.models import UUID_ID, Run

from . import services
from . import steps as recipe_steps
from .models import Recipe, RecipeVersion, Replay

router = Router(tags=["recipes"])
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
RecipePathId = Annotated[str, PathId("recipe", "rcp")]
RunPathId = Annotated[str, PathId("run", "run", (UUID_ID.pattern,))]
RUNS_LISTED = 20

ParameterName = Annotated[StrictStr, StringConstraints(pattern=recipe_steps.PARAMETER_NAME.pattern)]
ParameterValue = Annotated[StrictStr, StringConstraints(max_length=recipe_steps.PARAMETER_VALUE_MAX_CHARS)]
MarkedValue = Annotated[
    StrictStr, StringConstraints(max_length=recipe_steps.PARAMETER_VALUE_MAX_CHARS, pattern=NOT_BLANK)
]
VERSION_MAX = 2**31 - 1
VersionNumber = Annotated[int, Path(ge=1, le=VERSION_MAX, description="The version's number.")]


class RecipeIn(Schema):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"name": "Contact form", "parameters": {"name": "Ada Lovelace"}}]},
    )

    name: Annotated[StrictStr, StringConstraints(max_length=services.NAME_MAX_CHARS)] | None = Field(
        None, description="A name for people (at most 200 characters); the task's first line when omitted."
    )
    parameters: dict[ParameterName, MarkedValue] = Field(
        default_factory=dict,
        max_length=recipe_steps.PARAMETERS_MAX,
        json_schema_extra={"additionalProperties": False},
        description="Values the run typed that a replay takes as parameters: {name: the value as the run typed it} "
        "(names: lowercase letters, digits and _; at most 20). Each becomes {{name}} in the steps and the task; "
        "a value no step typed is invalid_request.",
    )


class RecipePatch(Schema):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"auto_accept": True}]})

    name: Annotated[StrictStr, StringConstraints(max_length=services.NAME_MAX_CHARS, pattern=NOT_BLANK)] | None = None
    auto_accept: StrictBool | None = Field(
        None, description="Accept a healed run's proposed version at once (no operator review)."
    )
    parameters: dict[StrictStr, ParameterValue] | None = Field(
        None, description="New defaults for the current version's parameters, by name (unknown names are invalid)."
    )


class TargetOut(Schema):
    role: str
    name: str
    nth: int = Field(description="Which of the elements with this role and name (0: the first).")
    frame: dict[str, str] | None = Field(description="{name, url} of the frame, or null for the page itself.")


class StepOut(Schema):
    action: str = Field(description="The browser member: navigate, left_click, form_input, type, key...")
    line: str = Field(description="The step as a readable line: click button 'Send message'.")
    target: TargetOut | None
    value: Any = Field(description="What it typed or chose: {{name}} for a parameter, {{secret:NAME}} for a secret.")
    url: str = Field(description="The URL the step left the page at (its checkpoint).")
    fingerprint: str = Field(description="The shape of the page the step left (its checkpoint).")


class ParameterOut(Schema):
    name: str
    default: str


class VersionOut(Schema):
    number: int
    status: Literal["accepted", "proposed", "declined"]
    source_run: str | None = Field(description="The run the steps come from (the recipe's or a healed replay).")
    steps: list[StepOut]
    parameters: list[ParameterOut]
    created_at: datetime


class ReplayRunOut(Schema):
    run_id: str
    status: str
    version: int
    replayed_steps: int
    healed_from_step: int | None
    cost_saved_usd: str | None


class RecipeOut(Schema):
    id: str
    name: str
    version: int = Field(description="The current (accepted) version's number: what a replay runs.")
    source_run: str | None
    task: str
    start_url: str
    output_schema: dict[str, Any] | None
    auto_accept: bool
    steps: list[StepOut] = Field(description="The current version's steps.")
    parameters: list[ParameterOut] = Field(description="The current version's parameters.")
    versions: list[VersionOut] = Field(description="Every version, newest first.")
    runs: list[ReplayRunOut] = Field(description="The latest 20 runs made from it, newest first.")
    created_at: datetime


class RecipeListOut(Schema):
    recipes: list[RecipeOut]


def step_out(step: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": step.get("action", ""),
        "line": recipe_steps.line(step),
        "target": step.get("target"),
        "value": step.get("value"),
        "url": step.get("url", ""),
        "fingerprint": step.get("fingerprint", ""),
    }


def version_out(version: RecipeVersion) -> dict[str, Any]:
    return {
        "number": version.number,
        "status": version.status,
        "source_run": version.source_run.public_id if version.source_run else None,
        "steps": [step_out(step) for step in version.steps],
        "parameters": version.parameters,
        "created_at": version.created_at,
    }


def replay_out(replay: Replay) -> dict[str, Any]:
    saved = replay.cost_saved_usd
    return {
        "run_id": replay.run.public_id,
        "status": replay.run.status,
        "version": replay.version.number,
        "replayed_steps": replay.replayed_steps,
        "healed_from_step": replay.healed_from_step,
        "cost_saved_usd": format(saved.normalize(), "f") if saved is not None else None,
    }


def recipe_out(recipe: Recipe) -> dict[str, Any]:
    versions = list(recipe.versions.select_related("source_run"))
    current = recipe.current()
    replays = recipe.replays.select_related("run", "version")[:RUNS_LISTED]
    return {
        "id": recipe.public_id,
        "name": recipe.name,
        "version": current.number,
        "source_run": recipe.source_run.public_id if recipe.source_run else None,
        "task": recipe.task,
        "start_url": recipe.start_url,
        "output_schema": recipe.output_schema,
        "auto_accept": recipe.auto_accept,
        "steps": [step_out(step) for step in current.steps],
        "parameters": current.parameters,
        "versions": [version_out(version) for version in versions],
        "runs": [replay_out(replay) for replay in replays],
        "created_at": recipe.created_at,
    }


def find_recipe(request: ApiRequest, recipe_id: str) -> Recipe:
    recipe = Recipe.objects.for_workspace(request.workspace).filter(public_id=recipe_id).first()
    if recipe is None:
        raise NotFound(f"No recipe '{recipe_id}' in this workspace.")
    return recipe


def find_run(request: ApiRequest, run_id: str) -> Run:
    runs = Run.objects.for_workspace(request.workspace)
    run = runs.filter(uuid=run_id).first() if UUID_ID.match(run_id) else runs.filter(public_id=run_id).first()
    if run is None:
        raise NotFound(f"No run '{run_id}' in this workspace.")
    return run


@router.post(
    "/runs/{run_id}/recipe",
    response={201: RecipeOut, 409: ErrorOut, **ERROR_RESPONSES},
    summary="Make a recipe from a run",
    description="A recipe (version 1) of a succeeded run's browser actions, each with the element it acted on "
    "(role and accessible name, frame and nth) and the page it left (URL and fingerprint). A run that did not "
    "succeed is 409 conflict; one with an action on a bare coordinate, or with no action at all, is invalid_request "
    "(docs/recipes.md).",
)
def make_recipe(request: ApiRequest, run_id: RunPathId, payload: RecipeIn) -> Status[dict[str, Any]]:
    run = find_run(request, run_id)
    body = payload.model_dump(exclude_unset=True)
    recipe = services.make_recipe(run, **body, created_by=request.user if request.user.is_authenticated else None)
    return Status(201, recipe_out(recipe))


@router.get("/recipes", response={200: RecipeListOut, **ERROR_RESPONSES}, summary="List recipes")
def list_recipes(request: ApiRequest) -> dict[str, Any]:
    return {"recipes": [recipe_out(recipe) for recipe in Recipe.objects.for_workspace(request.workspace)[:100]]}


@router.get("/recipes/{recipe_id}", response={200: RecipeOut, **ERROR_RESPONSES}, summary="Get a recipe")
def get_recipe(request: ApiRequest, recipe_id: RecipePathId) -> dict[str, Any]:
    return recipe_out(find_recipe(request, recipe_id))


@router.patch("/recipes/{recipe_id}", response={200: RecipeOut, **ERROR_RESPONSES}, summary="Change a recipe")
def update_recipe(request: ApiRequest, recipe_id: RecipePathId, payload: RecipePatch) -> dict[str, Any]:
    recipe = services.update(find_recipe(request, recipe_id), **payload.model_dump(exclude_unset=True))
    return recipe_out(recipe)


@router.post(
    "/recipes/{recipe_id}/versions/{number}/accept",
    response={200: RecipeOut, 409: ErrorOut, **ERROR_RESPONSES},
    summary="Accept a proposed version",
    description="Replays run it from now on. A version that is not proposed is 409 conflict.",
)
def accept_version(request: ApiRequest, recipe_id: RecipePathId, number: VersionNumber) -> dict[str, Any]:
    recipe = find_recipe(request, recipe_id)
    services.decide(recipe, number, accept=True)
    return recipe_out(recipe)


@router.post(
    "/recipes/{recipe_id}/versions/{number}/decline",
    response={200: RecipeOut, 409: ErrorOut, **ERROR_RESPONSES},
    summary="Decline a proposed version",
)
def decline_version(request: ApiRequest, recipe_id: RecipePathId, number: VersionNumber) -> dict[str, Any]:
    recipe = find_recipe(request, recipe_id)
    services.decide(recipe, number, accept=False)
    return recipe_out(recipe)
