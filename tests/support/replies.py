"""The agent's replies, as the Messages stub serves them, and what a test reads back from the runtime's requests."""

import re
import threading
from typing import Any

from scripted_api.wire import tool_use_reply


def browser(name: str, *, thinking: str | None = None, **member_input: Any) -> dict:
    """A reply calling one browser member, after a thinking block (signed by the stub) when `thinking` is given."""
    return tool_use_reply(name, member_input, toolset_name="browser", thinking=thinking)


def done(success: bool = True, output: str = "Finished.", *, thinking: str | None = None, **extra: Any) -> dict:
    return tool_use_reply("done", {"success": success, "output": output, **extra}, thinking=thinking)


def last_tool_result_text(request: dict) -> str:
    """The text of the last tool_result in a request's last user message (where the runtime puts its notices)."""
    content = request["messages"][-1]["content"]
    results = [block for block in content if block.get("type") == "tool_result"]
    blocks = results[-1]["content"] if results else []
    return "\n".join(block.get("text", "") for block in blocks if block.get("type") == "text")


def ref_of(snapshot: str, role: str, name: str) -> str:
    match = re.search(rf'{role} "{re.escape(name)}"[^\n]*\[ref=(\w+)\]', snapshot)
    assert match, f"no {role} {name!r} in:\n{snapshot}"
    return match.group(1)


def on_field(role: str, name: str, make):
    """A scripted reply that acts on a field of the page the agent read last (refs come from read_page)."""

    def reply(request: dict) -> dict:
        return make({"type": "ref", "ref": ref_of(last_tool_result_text(request), role, name)})

    return reply


class HeldReply:
    """A scripted reply that holds its request until the test lets it go (its worker dies meanwhile, or is told to
    stop), then answers `reply`."""

    def __init__(self, reply: dict) -> None:
        self.reply = reply
        self.arrived, self.release = threading.Event(), threading.Event()

    def __call__(self, request: dict) -> dict:
        self.arrived.set()
        self.release.wait(60)
        return self.reply
