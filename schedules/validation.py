"""A schedule's fields checked at create and change time: the cron line and time zone, and the run's launch fields by
the launch's own validators, without launching (a dry validation; the launch checks them again at every firing)."""

from typing import Any

from agent_platform import names
from agent_platform.errors import InvalidRequest
from agent_platform.models import Workspace
from runs import launch
from runs.files import clean_file_ids
from runs.judging.services import clean_judge_context
from runs.recipes import services as recipe_services
from runs.recipes import steps as recipe_steps

from .cron import CronError, parse, zone

NAME_MAX_CHARS = 200
# The launch fields a schedule's run may hold, decided one by one (a field the launch gains is not schedulable until
# it is added here and checked below).
SCHEDULABLE = frozenset(
    {
        "task", "start_url", "model", "effort", "thinking", "max_turns", "output_schema", "judge", "judge_context",
        "outcome", "allowed_domains", "metadata", "allow_javascript", "max_cost_usd", "file_ids", "proxy_id",
        "profile_id", "save_profile",
    }
)  # fmt: skip
# Launch fields a schedule does not take: each firing starts its own session, and secrets would have to be kept in
# clear between firings (not offered: docs/schedules.md).
NOT_SCHEDULABLE = frozenset({"session_id", "secrets", "idempotency_key"})
# A recipe's run: the recipe and its parameters instead of the task, start URL and schema, which are the recipe's.
RECIPE_SCHEDULABLE = (SCHEDULABLE - {"task", "start_url", "output_schema"}) | {"recipe_id", "parameters"}


def clean_name(name: object) -> str:
    return names.clean_name(name, NAME_MAX_CHARS)


def clean_cron(cron: object) -> str:
    if not isinstance(cron, str):
        raise InvalidRequest.of_field("cron", "must be a string of 5 fields, like '0 7 * * mon-fri'")
    line = " ".join(cron.split())
    try:
        parse(line)
    except CronError as error:
        raise InvalidRequest.of_field("cron", str(error)) from error
    return line


def clean_timezone(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidRequest.of_field("timezone", "must be an IANA time zone name, like 'Europe/Paris' or 'UTC'")
    try:
        zone(name)
    except CronError as error:
        raise InvalidRequest.of_field("timezone", str(error)) from error
    return name


def clean_run(workspace: Workspace, run: object) -> dict[str, Any]:
    """The launch fields, each checked as launch_run checks it; errors name the field as run.<field>."""
    if not isinstance(run, dict):
        raise InvalidRequest.of_field("run", "must be an object of launch fields (task, start_url, model...)")
    replays = "recipe_id" in run
    allowed = RECIPE_SCHEDULABLE if replays else SCHEDULABLE
    for key in run:
        if key not in allowed:
            if key in NOT_SCHEDULABLE:
                why = "is not taken by a schedule"
            elif replays and key in SCHEDULABLE:
                why = "is the recipe's, not given with recipe_id"
            else:
                why = "is not a launch field"
            raise InvalidRequest.of_field(f"run.{key}", f"{why}; a schedule's run takes {', '.join(sorted(allowed))}")
    try:
        if replays:
            clean_recipe(workspace, run.get("recipe_id"), run.get("parameters"))
        else:
            launch.clean_task(run.get("task"))
            launch.clean_start_url(run.get("start_url", ""))
        model = launch.clean_model(run.get("model"))
        launch.clean_max_turns(run.get("max_turns"))
        clean_judge_context(run.get("judge_context"))
        launch.clean_allowed_domains(run.get("allowed_domains"))
        launch.clean_metadata(run.get("metadata"))
        launch.clean_max_cost_usd(run.get("max_cost_usd"), workspace)
        for flag in ("judge", "allow_javascript"):
            if not isinstance(run.get(flag, False), bool):
                raise launch.invalid(flag, "must be true or false")
        launch.clean_output_schema(run.get("output_schema"))
        launch.clean_outcome(run.get("outcome"))
        clean_file_ids(workspace, run.get("file_ids"))
        launch.clean_proxy_id(workspace, run.get("proxy_id"))
        launch.profile_for_launch(workspace, run.get("profile_id"), session_id=None)
        launch.clean_save_profile(run.get("save_profile"))
        profile = launch.model_profile(model)  # last, as the launch does: a plain mistake never asks the Models API
        launch.clean_effort(run.get("effort"), profile)
        launch.clean_thinking(run.get("thinking"), profile)
    except InvalidRequest as error:
        raise prefixed(error) from error
    return dict(run)


def clean_recipe(workspace: Workspace, recipe_id: object, parameters: object) -> None:
    """A recipe of the workspace, parameters it has, and no secret to type (a schedule keeps none)."""
    recipe = recipe_services.find_recipe(workspace, recipe_id)
    version = recipe.current()
    recipe_services.replay_parameters(version, parameters)
    needed = recipe_steps.secrets_in(version.steps)
    if needed:
        raise launch.invalid(
            "recipe_id", f"the recipe types secrets ({', '.join(sorted(needed))}), which a schedule cannot keep"
        )


def prefixed(error: InvalidRequest) -> InvalidRequest:
    """The launch's refusal, its field named inside the schedule's run (run.task, run.output_schema...)."""
    if not error.field:
        return error
    message = error.message.replace(f"{error.field}:", f"run.{error.field}:", 1)
    return InvalidRequest(message, field=f"run.{error.field}", detail=error.detail)
