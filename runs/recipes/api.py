"""The recipes API: make a recipe from a succeeded run, read and change it, accept or decline a healed run's
proposed version. A replay is launched with POST /api/v1/runs and recipe_id (runs/api.py)."""

from typing import Annotated, Any

from ninja import Field, Path, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictStr, StringConstraints

from agent_platform.api import ERROR_RESPONSES, NOT_BLANK, ApiRequest, ErrorOut, PathId
from agent_platform.lookup import UUID_ID, find
from runs.models import Run

from . import services
from . import steps as recipe_steps
from .models import Recipe
from .reading import RecipeListOut, RecipeOut, recipe_out

router = Router(tags=["recipes"])
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
RecipePathId = Annotated[str, PathId("recipe", "rcp")]
RunPathId = Annotated[str, PathId("run", "run", (UUID_ID.pattern,))]

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


def find_recipe(request: ApiRequest, recipe_id: str) -> Recipe:
    return find(Recipe.objects.for_workspace(request.workspace), recipe_id, "recipe")


def find_run(request: ApiRequest, run_id: str) -> Run:
    return find(Run.objects.for_workspace(request.workspace), run_id, "run")


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
