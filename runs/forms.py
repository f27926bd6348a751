"""Reading the launch and re-judge forms into the launch contract's fields; the rules themselves live in launch_rules.py."""

import json
from typing import Any

from django.http import QueryDict

from agent_platform.errors import InvalidRequest
from judge.services import JUDGE_CONTEXT_MAX_STATEMENTS


def _int_or_raw(value: str) -> int | str | None:
    """Whole numbers become ints; anything else goes through as typed, so the launch rules name the field that is wrong."""
    value = value.strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        return value


def judge_context_from(post: QueryDict) -> list[str]:
    """The non-empty statements of the form's judge_context inputs, in order (blank inputs are spare slots)."""
    return [statement for statement in post.getlist("judge_context") if statement.strip()]


def launch_arguments(post: QueryDict) -> dict[str, Any]:
    """The LaunchRequest fields of a submitted launch form; a schema that is not JSON is refused here
    only because it cannot be passed on as an object at all."""
    schema_text = post.get("output_schema", "").strip()
    output_schema = None
    if schema_text:
        try:
            output_schema = json.loads(schema_text)
        except json.JSONDecodeError as error:
            raise InvalidRequest.of_field(
                "output_schema", f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
            ) from None
    outcome = None
    if post.get("outcome_enabled"):
        outcome = {
            "description": post.get("outcome_description", ""),
            "rubric": post.get("outcome_rubric", ""),
            "max_iterations": _int_or_raw(post.get("outcome_max_iterations", "")),
        }
        if outcome["max_iterations"] is None:
            del outcome["max_iterations"]
    judge = bool(post.get("judge"))
    secrets = secrets_from(post.get("secrets", ""))
    profile_id = post.get("profile_id", "").strip() or None
    return {
        "task": post.get("task", ""),
        "session_id": post.get("session_id", "").strip() or None,
        "start_url": post.get("start_url", ""),
        "model": post.get("model", "").strip() or None,
        "effort": post.get("effort", "").strip() or None,
        "thinking": post.get("thinking", "").strip() or None,
        "max_turns": _int_or_raw(post.get("max_turns", "")),
        "max_cost_usd": post.get("max_cost_usd", "").strip() or None,
        "output_schema": output_schema,
        "judge": judge,
        "judge_context": judge_context_from(post) if judge else [],
        "outcome": outcome,
        "secrets": secrets,
        # a follow-up keeps its session's proxy: the form sends none then
        "proxy_id": post.get("proxy_id", "").strip() or None,
        "profile_id": profile_id,
        "save_profile": bool(post.get("save_profile")) if profile_id else None,
    }


def secrets_from(text: str) -> dict[str, str] | None:
    """The form's secrets, one NAME=value a line; the launch rules check names and values."""
    secrets = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise InvalidRequest.of_field("secrets", f"line {number} is not NAME=value")
        secrets[name.strip()] = value.strip()
    return secrets or None


JUDGE_CONTEXT_SLOTS = range(JUDGE_CONTEXT_MAX_STATEMENTS)
