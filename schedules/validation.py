"""A schedule's fields checked at create and change time: the cron line and time zone, and the run's launch fields by
the launch contract's own pipeline (runs.launch_rules.check), without launching (a dry validation; the launch checks them again at every firing)."""

from typing import Any

from agent_platform import names
from agent_platform.errors import InvalidRequest
from agent_platform.models import Workspace
from runs.launch_rules import LaunchRequest, check, invalid
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
    """The launch fields, checked by the launch contract; errors name the field as run.<field>."""
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
    fields = dict(run)
    recipe_id, parameters = fields.pop("recipe_id", None), fields.pop("parameters", None)
    try:
        request = LaunchRequest.of(fields)
        if replays:
            clean_recipe(workspace, recipe_id, parameters)
            request, _, _ = recipe_services.replay_request(
                workspace, request, recipe_id=recipe_id, parameters=parameters
            )
        check(workspace, request)
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
        raise invalid(
            "recipe_id", f"the recipe types secrets ({', '.join(sorted(needed))}), which a schedule cannot keep"
        )


def prefixed(error: InvalidRequest) -> InvalidRequest:
    """The launch's refusal, its field named inside the schedule's run (run.task, run.output_schema...)."""
    if not error.field:
        return error
    message = error.message.replace(f"{error.field}:", f"run.{error.field}:", 1)
    return InvalidRequest(message, field=f"run.{error.field}", detail=error.detail)
