"""Builders the judge and outcome tests share: finished runs with a trajectory, and the judge's and grader's replies."""

import io
import struct
import zlib
from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from agent_platform.models import Price
from runs.events import emit
from runs.lifecycle import finish, mark_started
from runs.models import Run
from scripted_api.stub import JUDGE_TOOL
from scripted_api.wire import json_reply, tool_use_reply
from tests.support.factories import make_run

FINAL_PAGE_TEXT = "Acme Shop — Products: Kettle 24.90, Toaster 39.00, Mixer 89.50"
NOTICE = "[notice] 3 action turns remain of 4."


def judgment_reply(verdict: str = "pass", reason: str = "The output matches the page.", **flags) -> dict:
    """The judge's answer as structured output (the judge model supports it), after some thinking."""
    answer = {"verdict": verdict, "reason": reason, "blocked": False, "impossible": False, **flags}
    return json_reply(answer, thinking="Comparing the output with the final page.")


def judgment_tool_reply(verdict: str = "pass", reason: str = "The output matches the page.", **flags) -> dict:
    """The judge's answer through its strict tool, as a model without structured outputs gives it."""
    answer = {"verdict": verdict, "reason": reason, "blocked": False, "impossible": False, **flags}
    return tool_use_reply(JUDGE_TOOL, answer)


def evaluation_reply(result: str, explanation: str) -> dict:
    return json_reply({"result": result, "explanation": explanation})


def tiny_png(width: int = 2, height: int = 2) -> bytes:
    """A valid PNG, small enough to compare byte for byte after base64."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    out = io.BytesIO()
    out.write(b"\x89PNG\r\n\x1a\n")
    out.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
    out.write(chunk(b"IDAT", zlib.compress(raw)))
    out.write(chunk(b"IEND", b""))
    return out.getvalue()


def play_trajectory(run: Run, *, screenshot_url: str | None = None, final_view: bool = True) -> None:
    """The events a short run leaves, in the shapes the runtime writes them."""
    emit(run, "agent.message", {"text": "I will open the shop and read the products."})
    emit(run, "agent.tool_use", {"id": "toolu_1", "name": "navigate", "input": {"url": "http://shop.test/"}})
    long_page = "Products listed: " + "Kettle 24.90; " * 60
    emit(
        run,
        "agent.tool_result",
        {
            "tool_use_id": "toolu_1",
            "name": "navigate",
            "content": f"{long_page}\n{NOTICE}",
            "notices": [NOTICE],
            "is_error": False,
            "screenshot_url": screenshot_url,
        },
    )
    emit(run, "agent.tool_use", {"id": "toolu_2", "name": "done", "input": {"success": True, "output": "3 products"}})
    emit(
        run,
        "agent.tool_result",
        {
            "tool_use_id": "toolu_2",
            "content": "output_schema_violation: at $: 'items' is a required property",
            "is_error": True,
        },
    )
    done_input = {"success": True, "output": "Kettle 24.90, Toaster 39.00, Mixer 89.50", "data": {"count": 3}}
    emit(run, "agent.tool_use", {"id": "toolu_3", "name": "done", "input": done_input})
    if final_view:
        emit(
            run,
            "agent.final_view",
            {
                "url": "http://shop.test/",
                "title": "Acme Shop",
                "text": FINAL_PAGE_TEXT,
                "screenshot_url": screenshot_url,
            },
        )


def finished_run(workspace, *, status: str = Run.Status.SUCCEEDED, judge: bool = True, **fields) -> Run:
    """A run that went through start, a short trajectory and its ending (which enqueues the judge when judged)."""
    screenshot_url = fields.pop("screenshot_url", None)
    final_view = fields.pop("final_view", True)
    run = make_run(workspace, judge=judge, **fields)
    mark_started(run, "tests")
    play_trajectory(run, screenshot_url=screenshot_url, final_view=final_view)
    if status == Run.Status.SUCCEEDED:
        finish(run, status, success=True, output="Kettle 24.90, Toaster 39.00, Mixer 89.50", data={"count": 3})
    elif status == Run.Status.CANCELLED:
        finish(run, status, error_code=Run.ErrorCode.CANCELLED, error_message="Cancelled by an operator.")
    else:
        finish(run, status, success=False, output="Could not find it.", error_code=Run.ErrorCode.TASK_FAILED)
    run.refresh_from_db()
    return run


def price_in_force(model: str) -> Price:
    """A price row newer than any seeded one, so it is the one in force for `model` now."""
    return Price.objects.create(
        model=model,
        input_per_mtok=Decimal(3),
        output_per_mtok=Decimal(15),
        cache_write_5m_per_mtok=Decimal("3.75"),
        cache_write_1h_per_mtok=Decimal(6),
        cache_read_per_mtok=Decimal("0.30"),
        valid_from=timezone.now() - timedelta(seconds=1),
    )


def user_text(request: dict) -> str:
    """Every text block of a request's user messages, joined."""
    parts = []
    for message in request.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content or []:
            if block.get("type") == "text":
                parts.append(block["text"])
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                parts.append(inner if isinstance(inner, str) else str(inner))
    return "\n".join(parts)


def image_blocks(request: dict) -> list[dict]:
    return [
        block
        for message in request.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "image"
    ]
