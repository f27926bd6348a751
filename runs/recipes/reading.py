"""A recipe as every door shows it (RecipeOut): the v1 endpoints, the recipe pages and the MCP tools answer from
these, so none calls another's."""

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from agent_platform.lib.money import exact_usd_or_none

from . import steps as recipe_steps
from .models import Recipe, RecipeVersion, Replay

# How many of a recipe's replays it lists, newest first.
RUNS_LISTED = 20


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
        "cost_saved_usd": exact_usd_or_none(saved),
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
