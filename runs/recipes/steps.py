"""A recipe's steps: made from a run's events (each browser action that worked, with the target it acted on and
the page it left), written with {{name}} parameters, rendered for a replay, and read as a person says them."""

import re
from collections.abc import Iterable
from typing import Any

from runs.models import Event
from runs.secrets import PLACEHOLDER

# The browser members a recipe replays, and the input field that holds each one's value.
VALUE_FIELDS = {
    "navigate": "url",
    "left_click": None,
    "double_click": None,
    "triple_click": None,
    "right_click": None,
    "hover": None,
    "scroll_to": None,
    "type": "text",
    "key": "text",
    "form_input": "value",
}
# Actions that act on an element and cannot be replayed without one (type and key act on the focused element).
NEEDS_TARGET = frozenset(
    {"left_click", "double_click", "triple_click", "right_click", "hover", "scroll_to", "form_input"}
)
PARAMETER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
PARAMETER = re.compile(r"\{\{([a-z][a-z0-9_]{0,39})\}\}")
PARAMETERS_MAX = 20
PARAMETER_VALUE_MAX_CHARS = 2000


class NotReplayable(Exception):
    """A run whose steps a recipe cannot hold (an action on a coordinate, with no element a role locator finds)."""


def parameterize(value: Any, parameters: dict[str, str]) -> Any:
    """`value` with each parameter's value written {{name}} (the longest values first, so one inside another is
    left to the longer)."""
    if not isinstance(value, str):
        return value
    for name, given in sorted(parameters.items(), key=lambda item: -len(item[1])):
        if given:
            value = value.replace(given, "{{" + name + "}}")
    return value


def render(value: Any, parameters: dict[str, str]) -> Any:
    """`value` with its {{name}} parameters replaced by a replay's values ({{secret:NAME}} stays: the toolset types
    the run's secret for it)."""
    if not isinstance(value, str):
        return value
    return PARAMETER.sub(lambda match: parameters.get(match.group(1), match.group(0)), value)


def parameters_in(value: Any) -> set[str]:
    return set(PARAMETER.findall(value)) if isinstance(value, str) else set()


def secrets_in(steps: Iterable[dict[str, Any]]) -> set[str]:
    """The run secrets the steps type ({{secret:NAME}}): a replay must be given each."""
    return {name for step in steps if isinstance(step.get("value"), str) for name in PLACEHOLDER.findall(step["value"])}


def steps_of(events: Iterable[Event], parameters: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The steps of a run, in order: each browser action that worked and has its target recorded (agent.target), and
    each step a replay did (recipe.step, kept as the recipe wrote it, with the page it left as its checkpoint). Raises NotReplayable for an action a replay
    cannot find its element for."""
    parameters = parameters or {}
    uses: dict[str, dict[str, Any]] = {}
    steps: list[dict[str, Any]] = []
    for event in events:
        payload = event.payload
        if event.type == "agent.tool_use" and payload.get("toolset") == "browser":
            uses[str(payload.get("id"))] = payload
        elif event.type == "recipe.step" and payload.get("acted", payload.get("done")):
            steps.append(dict(payload["recipe_step"]))
        elif event.type == "agent.target":
            use = uses.get(str(payload.get("tool_use_id")))
            member = str(payload.get("member") or "")
            if use is None or member not in VALUE_FIELDS:
                continue
            target = payload.get("target")
            if target is None and member in NEEDS_TARGET:
                raise NotReplayable(
                    f"{member} at turn {use.get('turn')} acted on a point of the page, not an element a replay can "
                    "find by role and name"
                )
            field = VALUE_FIELDS[member]
            raw = (use.get("input") or {}).get(field) if field else None
            steps.append(
                {
                    "action": member,
                    "target": target,
                    "value": parameterize(raw, parameters),
                    "url": payload.get("url", ""),
                    "fingerprint": payload.get("fingerprint", ""),
                }
            )
    return steps


def quoted(text: Any) -> str:
    return "'" + str(text).replace("\n", " ")[:200] + "'"


def target_text(target: dict[str, Any] | None) -> str:
    """A target as a person says it: button 'Send message' (the 2nd link 'More' when it is not the first)."""
    if not target:
        return "the focused element"
    name = f" {quoted(target['name'])}" if target.get("name") else ""
    nth = int(target.get("nth") or 0)
    ordinal = f"the {ordinal_word(nth + 1)} " if nth else ""
    frame = " in a frame" if target.get("frame") else ""
    return f"{ordinal}{target['role']}{name}{frame}"


def ordinal_word(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


def line(step: dict[str, Any]) -> str:
    """One step as a readable line: click button 'Send message', fill textbox 'Your name' with '{{name}}'."""
    action, target, value = step.get("action"), step.get("target"), step.get("value")
    if action == "navigate":
        return f"go to {value}"
    if action in ("left_click", "double_click", "triple_click", "right_click"):
        verb = {"left_click": "click", "double_click": "double-click", "triple_click": "triple-click"}.get(
            str(action), "right-click"
        )
        return f"{verb} {target_text(target)}"
    if action == "hover":
        return f"hover over {target_text(target)}"
    if action == "scroll_to":
        return f"scroll to {target_text(target)}"
    if action == "type":
        return f"type {quoted(value)} into {target_text(target)}"
    if action == "key":
        return f"press {value} in {target_text(target)}" if target else f"press {value}"
    if action == "form_input":
        return f"set {target_text(target)} to {quoted(value)}"
    return str(action)
