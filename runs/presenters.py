"""What the run pages show, made from runs, events and signals: timeline rows, result panels' text, data trees and
tables, signal rows, replay steps, the judge pill's state. Plain functions of model instances and JSON, no request
and no query of their own; the views (runs/views.py) fetch, and hand these what they fetched."""

import json
from decimal import Decimal
from typing import Any

from agent_platform.lib.text import IMAGE_PLACEHOLDER, content_text, json_text

from . import event_types
from .models import Event, Run
from .profiles.models import what_save_stores

# Event types the timeline draws in their own way (templates/runs/_event.html); any other is shown with its raw data.
KNOWN_TYPES = event_types.DRAWN
# A tool result that starts with this is the runtime refusing a done whose data broke the output schema.
VIOLATION_PREFIX = "output_schema_violation"
# A browser action whose result starts with one of these did not run, so its reply is not an action turn.
REFUSED_PREFIXES = ("verdict_required", "Not executed")
# Event types that carry the screenshot taken after a step.
SCREENSHOT_TYPES = (event_types.AGENT_TOOL_RESULT.name, event_types.AGENT_FINAL_VIEW.name)


# --- the timeline ----------------------------------------------------------------------------------------------------


def result_text(content: Any) -> str:
    """A tool result's content as text: a string, or the text blocks of a content list, images as a placeholder."""
    return content_text(content, image=IMAGE_PLACEHOLDER, other=json_text)


def result_lines(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool result as lines, the runtime's notices marked (and its separate notices added once each)."""
    lines = [
        {"text": line, "notice": line.startswith("[notice]")}
        for line in result_text(payload.get("content")).split("\n")
    ]
    known = {line["text"] for line in lines if line["notice"]}
    for notice in payload.get("notices") or []:
        text = notice if str(notice).startswith("[notice]") else f"[notice] {notice}"
        if text not in known:
            lines.append({"text": text, "notice": True})
    return lines


def reply_labels(events: list[Event]) -> dict[int, str]:
    """Each model reply's separator in the timeline, numbered the way the turn budget counts: a reply whose browser
    action ran is an action turn ("Turn 2"); one that only called done is the verdict; any other is a reply."""
    results = {event.payload.get("tool_use_id"): event for event in events if event.type == "agent.tool_result"}
    acted: dict[int, bool] = {}
    verdict: set[int] = set()
    for event in events:
        reply = event.payload.get("turn")
        if event.type not in ("agent.message", "agent.tool_use") or not isinstance(reply, int):
            continue
        acted.setdefault(reply, False)
        if event.type != "agent.tool_use":
            continue
        if event.payload.get("toolset") == "browser":
            result = results.get(event.payload.get("id"))
            text = result_text(result.payload.get("content")) if result else ""
            if not text.startswith(REFUSED_PREFIXES):
                acted[reply] = True
            elif text.startswith("verdict_required"):
                verdict.add(reply)
        elif event.payload.get("name") == "done":
            verdict.add(reply)
    labels = {}
    action_turns = 0
    for reply in sorted(acted):
        if acted[reply]:
            action_turns += 1
            labels[reply] = f"Turn {action_turns}"
        else:
            labels[reply] = "Verdict" if reply in verdict else "Reply"
    return labels


def timeline(events: list[Event]) -> list[dict[str, Any]]:
    """The run's events as the template shows them: pretty tool inputs, result lines with notices marked."""
    items = []
    current_turn = None
    labels = reply_labels(events)
    for event in events:
        item: dict[str, Any] = {"seq": event.seq, "type": event.type, "data": event.payload, "at": event.processed_at}
        turn = event.payload.get("turn") if event.type in ("agent.message", "agent.tool_use") else None
        if turn is not None and turn != current_turn:
            item["turn_start"] = turn
            item["turn_label"] = labels.get(turn, "Reply")
            item["turn_action"] = (
                item["turn_label"].removeprefix("Turn ") if item["turn_label"].startswith("Turn ") else ""
            )
            current_turn = turn
        if event.type == "agent.tool_use":
            item["input_json"] = json.dumps(event.payload.get("input"), indent=2, ensure_ascii=False)
        elif event.type == "agent.tool_result":
            item["lines"] = result_lines(event.payload)
        elif event.type == event_types.SIGN_IN_STATE.name:
            item["save_stores"] = what_save_stores(event.payload)
        elif event.type not in KNOWN_TYPES:
            item["raw_json"] = json.dumps(event.payload, indent=2, ensure_ascii=False)
        items.append(item)
    return items


def violations(tool_results: list[Event]) -> list[dict[str, Any]]:
    """The tool results that refused a done for breaking the output schema: their seq and text."""
    found = []
    for event in tool_results:
        text = result_text(event.payload.get("content"))
        if event.payload.get("is_error") and text.startswith(VIOLATION_PREFIX):
            found.append({"seq": event.seq, "text": text})
    return found


def screenshots(events: list[Event]) -> list[dict[str, Any]]:
    """The run's screenshots in order: each one's event seq, picture URL and the page it showed."""
    return [
        {"seq": event.seq, "url": event.payload["screenshot_url"], "page_url": event.payload.get("url") or ""}
        for event in events
        if event.type in SCREENSHOT_TYPES and event.payload.get("screenshot_url")
    ]


def replay_steps(events: list[Event]) -> list[dict[str, Any]]:
    """One replay step per screenshot: the picture, the agent's message of that reply, the action and its result.

    Texts are passed to the page as JSON (json_script) and drawn with textContent: they hold page and model text."""
    message_of: dict[Any, str] = {}
    use_of: dict[Any, dict[str, Any]] = {}
    last_message = ""
    steps = []
    for event in events:
        data = event.payload
        if event.type == "agent.message":
            message_of[data.get("turn")] = message_of.get(data.get("turn"), "") + str(data.get("text") or "")
            last_message = message_of[data.get("turn")]
        elif event.type == "agent.tool_use":
            use_of[data.get("id")] = data
        elif event.type in SCREENSHOT_TYPES and data.get("screenshot_url"):
            use = use_of.get(data.get("tool_use_id")) or {}
            final = event.type == "agent.final_view"
            steps.append(
                {
                    "seq": event.seq,
                    "screenshot": data["screenshot_url"],
                    "url": data.get("url") or "",
                    # the final view shows the agent's last words (its verdict reply)
                    "message": last_message if final else message_of.get(data.get("turn"), ""),
                    "action": "Final view" if final else str(use.get("name") or data.get("name") or ""),
                    "input": None if final else use.get("input"),
                    "result": "" if final else result_text(data.get("content"))[:2000],
                    "is_error": bool(data.get("is_error")),
                }
            )
    return steps


def turn_budget(run: Run, events: list[Event]) -> int:
    """Action turns used: the runtime's own count once it saved one, else the action turns in the timeline."""
    saved = (run.signals or {}).get("turns")
    if saved is not None:
        return int(saved)
    return sum(1 for label in reply_labels(events).values() if label.startswith("Turn "))


# --- the result panels -----------------------------------------------------------------------------------------------


def tree(value: Any, depth: int = 0) -> dict[str, Any]:
    """A JSON value as nested nodes for the data tree template."""
    if isinstance(value, dict):
        return {"kind": "object", "items": [(str(k), tree(v, depth + 1)) for k, v in value.items()]}
    if isinstance(value, list):
        return {"kind": "array", "items": [(str(i), tree(v, depth + 1)) for i, v in enumerate(value)]}
    kind = (
        "string"
        if isinstance(value, str)
        else "number"
        if isinstance(value, int | float) and not isinstance(value, bool)
        else "other"
    )
    return {"kind": "scalar", "type": kind, "json": json.dumps(value, ensure_ascii=False)}


def decimal_places(values: list[Any]) -> int | None:
    """How many decimals a column of numbers is shown with: as many as its most precise value has (at most 6), so
    prices read 49.00, 14.50, 9.99 and not 49.0, 14.5, 9.99. None for a column that is not all numbers."""
    numbers = [v for v in values if v is not None]
    if not numbers or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers):
        return None
    fractions = [repr(v) for v in numbers if isinstance(v, float) and not v.is_integer()]
    if not fractions:
        return 0  # whole numbers, even when JSON wrote them as 49.0
    return min(6, max(len(text.split(".")[1]) if "." in text and "e" not in text else 0 for text in fractions))


def cell(value: Any, places: int | None) -> Any:
    """A table cell's value: nested JSON as text, a number with its column's decimals, anything else as it is."""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    if places is not None and value is not None:
        return f"{value:.{places}f}"
    return value


def tables(data: Any) -> list[dict[str, Any]]:
    """The arrays of flat objects in `data` (top level or one level down) as tables: the readable view of results."""
    found: list[dict[str, Any]] = []
    if not isinstance(data, dict):
        return found
    for key, value in data.items():
        if isinstance(value, list) and value and all(isinstance(row, dict) for row in value):
            columns: list[str] = []
            for row in value:
                columns.extend(c for c in row if c not in columns)
            places = {column: decimal_places([row.get(column) for row in value]) for column in columns}
            rows = [
                [{"value": cell(row.get(c), places[c]), "numeric": places[c] is not None} for c in columns]
                for row in value
            ]
            found.append({"name": key, "columns": columns, "rows": rows})
    return found


# The runtime's signals in words (spec: Results and verdicts, Signals); a value of None reads "not yet".
SIGNAL_LABELS = {
    "turns": "Action turns used",
    "max_turns": "Action turns allowed",
    "budget_notices": "Budget warnings shown",
    "loop_nudges": "Told it was repeating itself",
    "stagnation_nudges": "Told the page stopped changing",
    "failures_max": "Failure budget reached",
    "verdict_turn": "What brought the verdict turn",
    "verdict_followed": "Called done on the verdict turn",
}
VERDICT_TURN_WORDS = {
    "none": "none (the agent ended on its own)",
    "cap": "the action budget",
    "failures": "five failures in a row",
    "prose": "a reply without done",
    "budget": "the cost cap",
}
# A run that ended with no verdict turn: what ended it, when it was not the agent (with done, or task_failed).
ENDED_WITHOUT_VERDICT_TURN: dict[str, str] = {
    Run.ErrorCode.CANCELLED: "none (the run was cancelled)",
    Run.ErrorCode.COST_LIMIT: "none (the cost cap stopped the run)",
    Run.ErrorCode.TIMEOUT: "none (the run timed out)",
    Run.ErrorCode.MODEL_ERROR: "none (the model failed)",
    Run.ErrorCode.MODEL_REFUSED: "none (the model declined the task)",
    Run.ErrorCode.BROWSER_ERROR: "none (the browser failed)",
    Run.ErrorCode.WORKER_LOST: "none (its worker was lost)",
    Run.ErrorCode.AGENT_LIMIT: "none (a limit of the run stopped it)",
    Run.ErrorCode.AGENT_INCOMPLETE: "none (the agent stopped without done)",
}
HOT_SIGNALS = ("failures_max", "loop_nudges", "stagnation_nudges")


def no_verdict_turn_words(run: Run | None) -> str:
    """`verdict_turn: none` in words: whatever ended the run (a cancel, the cost cap...), not always the agent."""
    if run is not None and not run.is_finished:
        return "none so far"
    if run is not None and run.error_code in ENDED_WITHOUT_VERDICT_TURN:
        return ENDED_WITHOUT_VERDICT_TURN[run.error_code]
    if run is not None and run.status == Run.Status.CANCELLED:
        return ENDED_WITHOUT_VERDICT_TURN[Run.ErrorCode.CANCELLED]
    return VERDICT_TURN_WORDS["none"]


def signal_rows(signals: dict[str, Any], run: Run | None = None) -> list[dict[str, Any]]:
    """Signals as labelled rows; `verdict_followed` only means something when a verdict turn happened. With the run,
    "no verdict turn" says what ended it."""
    rows = []
    for key, value in signals.items():
        if key == "verdict_followed" and signals.get("verdict_turn") in (None, "none"):
            shown = "no verdict turn"
        elif key == "verdict_turn" and value == "none":
            shown = no_verdict_turn_words(run)
        elif key == "verdict_turn":
            shown = VERDICT_TURN_WORDS.get(str(value), str(value))
        elif value is True:
            shown = "yes"
        elif value is False:
            shown = "no"
        elif value is None:
            shown = "not yet"
        else:
            shown = str(value)
        rows.append(
            {"key": key, "label": SIGNAL_LABELS.get(key, key.replace("_", " ")), "value": shown,
             "hot": key in HOT_SIGNALS and bool(value)}
        )  # fmt: skip
    return rows


def judge_state(run: Run, judged: bool) -> str:
    """The run's judging in one word for its pills: judged, judging, on (before it ends), skipped (cancelled runs
    are never judged), or "" for a run without the judge."""
    if judged:
        return "judged"
    if not run.judge:
        return ""
    if not run.is_finished:
        return "on"
    return "skipped" if run.status == Run.Status.CANCELLED else "judging"


def percent_of(used: int | Decimal, allowed: int | Decimal | None) -> int:
    """How much of a budget is used, in whole percent capped at 100; 0 when there is no budget."""
    return min(100, round(100 * used / allowed)) if allowed else 0


def agent_verdict(run: Run | None) -> tuple[str, str]:
    """The agent's own verdict on a run, as a label and its badge's class: success or failure as the agent said in
    its done; "no verdict" for a finished run whose agent said neither (a limit, a crash, a cancel, a sign-in); "—"
    while it runs or before it exists. Triage's overclaim and underclaim reading counts "no verdict" with failure,
    but no page calls it a failure: the agent never said so."""
    if run is not None and run.success is True:
        return "success", "v-success"
    if run is not None and run.success is False:
        return "failure", "v-failure"
    if run is not None and run.is_finished:
        return "no verdict", "v-none"
    return "—", "v-none"
