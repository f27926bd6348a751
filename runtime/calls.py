"""The agent's tool calls as the loop answers them: result blocks, the done check, the runtime's notices in a result,
and the events a call and its result are recorded as."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anthropic.types.beta import BetaToolUseBlock

from agent_platform.lib.text import bounded, content_text
from runs.schema import data_problems

from . import prompts
from .notices import READ_ONLY_MEMBERS

BROWSER_TOOLSET = "browser"
EVENT_TEXT_MAX_CHARS = 20_000
# Members that read the page without changing it and without giving an image of it
READS_WITHOUT_IMAGE = READ_ONLY_MEMBERS - {"screenshot", "zoom"}


@dataclass
class CallResult:
    """One tool call of a reply and its answer: the tool_result block, and a screenshot's URL if the call took one."""

    use: BetaToolUseBlock
    block: dict[str, Any]
    screenshot_url: str | None = None


@dataclass
class ReplyCalls:
    """What running one reply's tool calls gave: their results, and what the rest of the turn is decided on."""

    results: list[CallResult] = field(default_factory=list)
    actions: list[tuple[str, dict[str, object]]] = field(default_factory=list)  # browser and extract calls, as run
    accepted: dict[str, Any] | None = None  # the verdict of a valid done
    done_called: bool = False
    acted: bool = False  # an action that can change the page succeeded
    halted: bool = False  # the last browser action failed: the reply's later ones do not run
    image_begun: bool = False  # the turn's live-view image was begun after its last action (only reads followed)

    def showed_page(self) -> bool:
        """Whether a result already shows the page (a screenshot), so the turn needs no live-view image."""
        return any(result.screenshot_url for result in self.results) or any(
            has_image(result.block["content"]) for result in self.results
        )


def is_done(use: BetaToolUseBlock) -> bool:
    return use.name == prompts.DONE_TOOL and not use.toolset_name


def is_browser(use: BetaToolUseBlock) -> bool:
    return use.toolset_name == BROWSER_TOOLSET


def only_reads(uses: list[BetaToolUseBlock]) -> bool:
    """Whether these calls (the rest of a reply) only read the page: no action, no image of it, no other tool."""
    return all(is_browser(use) and use.name in READS_WITHOUT_IMAGE for use in uses)


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def active_url(content: Any) -> str | None:
    """The active tab's URL from the browser_state block the SDK appends to a member's result."""
    if isinstance(content, str):
        return None
    for block in content or []:
        if block.get("type") == "browser_state":
            for tab in block.get("tabs") or []:
                if tab.get("active"):
                    url: str | None = tab.get("url")
                    return url
    return None


def has_image(content: Any) -> bool:
    return not isinstance(content, str) and any(block.get("type") == "image" for block in content or [])


def error_text(error: Exception) -> str:
    content = getattr(error, "content", None)
    if content is None:
        return str(error)
    return content if isinstance(content, str) else content_text(content)


def result_block(use: BetaToolUseBlock, text: str, *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": use.id, "content": [text_block(text)]}
    if use.toolset_name:
        block["toolset_name"] = use.toolset_name  # the API rejects a member's result without it
    if is_error:
        block["is_error"] = True
    return block


def add_notices(block: dict[str, Any], lines: list[str]) -> None:
    """The notices go into a tool result before the SDK's browser_state block, where the SDK puts its own text."""
    if isinstance(block["content"], str):
        block["content"] = [text_block(block["content"])]
    content = block["content"]
    at = next((index for index, inner in enumerate(content) if inner.get("type") == "browser_state"), len(content))
    content.insert(at, text_block("\n".join(lines)))


def check_done(use: BetaToolUseBlock, schema: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Validate a done call under the run's output_schema (or none): its result block, and the accepted verdict or
    None. Data is required with success true only; whenever it is given it is held to the schema."""
    given = use.input if isinstance(use.input, dict) else {}
    problems = []
    if not isinstance(given.get("success"), bool):
        problems.append(prompts.DONE_SUCCESS_NOT_BOOLEAN)
    if not isinstance(given.get("output"), str):
        problems.append(prompts.DONE_OUTPUT_NOT_STRING)
    if problems:
        return result_block(use, prompts.invalid_input(problems), is_error=True), None
    data = given.get("data")
    if schema is not None and given["success"]:
        violations = [prompts.DONE_DATA_REQUIRED] if "data" not in given else data_problems(schema, data)
    elif schema is not None:
        # a failure may come without data; data it does give is held to the schema
        violations = data_problems(schema, data) if data is not None else []
    else:
        violations = data_problems({}, data) if data is not None else []
    if violations:
        return result_block(use, prompts.output_schema_violation(violations), is_error=True), None
    done = {"success": given["success"], "output": given["output"], "data": data}
    return result_block(use, prompts.VERDICT_RECORDED), done


def tool_use_event(use: BetaToolUseBlock, turn: int) -> dict[str, Any]:
    """The agent.tool_use event of a call."""
    return {"id": use.id, "name": use.name, "toolset": use.toolset_name, "input": use.input, "turn": turn}


def tool_result_event(
    use: BetaToolUseBlock, block: dict[str, Any], lines: list[str], screenshot_url: str | None, turn: int
) -> dict[str, Any]:
    """The agent.tool_result event of a call's result, with the turn's notices when it is the last."""
    return {
        "tool_use_id": use.id,
        "name": use.name,
        "content": bounded(content_text(block["content"]), EVENT_TEXT_MAX_CHARS, marker_within_limit=False),
        "notices": lines,
        "is_error": bool(block.get("is_error")),
        "screenshot_url": screenshot_url,
        "url": active_url(block["content"]),
        "turn": turn,
    }
