"""The request rules of the Messages API, checked the way the real API checks them, each refusal named by its rule."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import hmac
import json
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .catalogue import SAMPLING_DEFAULTS, CatalogueModel, catalogue_model

MAX_REQUEST_BYTES = 32 * 1024 * 1024
MAX_IMAGES = 100
MAX_CACHE_BREAKPOINTS = 4
CHARS_PER_TOKEN = 4
# An image whose size cannot be read (a URL source, a truncated header) is priced as a typical screenshot.
UNKNOWN_IMAGE_TOKENS = 1600
PIXELS_PER_TOKEN = 750
THINKING_BLOCK_KEYS = {"type", "thinking", "signature"}

# Every rule the validator enforces, in the order it checks them (the closing note lists these).
RULES = (
    "request_too_large",
    "unknown_model",
    "retired_model",
    "max_tokens",
    "messages_required",
    "message_role",
    "system_message_text",
    "first_message_user",
    "nonempty_message",
    "tool_use_answered",
    "tool_results_first",
    "tool_results_in_order",
    "tool_result_orphan",
    "toolset_result_name",
    "thinking_signature",
    "thinking_kept",
    "cache_control_limit",
    "image_limit",
    "context_window",
    "forced_tool_choice",
    "thinking_type",
    "thinking_effort",
    "effort_level",
    "sampling_params",
)


@dataclass(frozen=True)
class Refusal:
    """A request the API would refuse: the rule it breaks, the HTTP status and the error body's type and message."""

    rule: str
    message: str
    status: int = 400
    error_type: str = "invalid_request_error"
    request: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @property
    def full_message(self) -> str:
        return f"rule {self.rule}: {self.message}"


class RuleBroken(Exception):
    def __init__(self, rule: str, message: str, status: int = 400, error_type: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.refusal = Refusal(rule, message, status, error_type)


def broken(rule: str, message: str) -> RuleBroken:
    return RuleBroken(rule, message)


# --- thinking blocks: signed on the way out, checked on the way back ---------------------------------------------


class ThinkingLedger:
    """Signs the thinking blocks a server issues and remembers which tool calls each assistant turn carried them with.

    The signature is an HMAC of the model and the thinking text under the server's secret: a block edited, or moved
    into another model's conversation, no longer verifies.
    """

    MAX_REMEMBERED = 100_000

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._lock = threading.Lock()
        self._before_tool_use: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    def sign(self, model: str, thinking: str) -> str:
        digest = hmac.new(self._secret, f"{model}\x00{thinking}".encode(), hashlib.sha256).digest()
        return base64.b64encode(b"stub-thinking:" + digest).decode()

    def verifies(self, model: str, block: dict[str, Any]) -> bool:
        signature = block.get("signature")
        thinking = block.get("thinking")
        if not isinstance(signature, str) or not isinstance(thinking, str):
            return False
        return hmac.compare_digest(signature, self.sign(model, thinking))

    def issued(self, content: list[dict[str, Any]]) -> None:
        """Remember, for each tool_use of an issued message, the signatures of the thinking blocks before it."""
        signatures: list[str] = []
        with self._lock:
            for block in content:
                if block.get("type") == "thinking":
                    signatures.append(block["signature"])
                elif block.get("type") == "tool_use" and signatures:
                    self._before_tool_use[block["id"]] = tuple(signatures)
            while len(self._before_tool_use) > self.MAX_REMEMBERED:
                self._before_tool_use.popitem(last=False)

    def expected_before(self, tool_use_id: str) -> tuple[str, ...]:
        with self._lock:
            return self._before_tool_use.get(tool_use_id, ())


# --- sizes: tokens and images ------------------------------------------------------------------------------------


def image_size(block: dict[str, Any]) -> tuple[int, int] | None:
    """Width and height from a base64 PNG or JPEG image block's header, or None when they cannot be read."""
    source = block.get("source") or {}
    if source.get("type") != "base64" or not isinstance(source.get("data"), str):
        return None
    data = source["data"]
    try:
        head = base64.b64decode(data[:64], validate=False)
    except (binascii.Error, ValueError):
        return None
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        return struct.unpack(">II", head[16:24])
    if head[:2] == b"\xff\xd8":
        try:
            return _jpeg_size(base64.b64decode(data, validate=False))
        except (binascii.Error, ValueError, struct.error):
            return None
    return None


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(raw):
        if raw[index] != 0xFF:
            index += 1
            continue
        marker = raw[index + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            index += 2
            continue
        length = struct.unpack(">H", raw[index + 2 : index + 4])[0]
        # Start-of-frame markers (baseline, progressive, ...) carry the height and width.
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", raw[index + 5 : index + 9])
            return width, height
        index += 2 + length
    return None


def image_tokens(block: dict[str, Any]) -> int:
    size = image_size(block)
    if size is None:
        return UNKNOWN_IMAGE_TOKENS
    width, height = size
    return max((width * height) // PIXELS_PER_TOKEN, 1)


def _walk_images(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        own = [value] if value.get("type") == "image" else []
        return own + [image for key, item in value.items() if key != "source" for image in _walk_images(item)]
    if isinstance(value, list):
        return [image for item in value for image in _walk_images(item)]
    return []


def _without_image_data(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("type") == "image":
            return {"type": "image"}
        return {k: _without_image_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_image_data(v) for v in value]
    return value


def estimate_tokens(value: Any) -> int:
    """About four characters per token of text (JSON structure included), and each image by its pixel size."""
    text = json.dumps(_without_image_data(value), separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return len(text) // CHARS_PER_TOKEN + sum(image_tokens(image) for image in _walk_images(value))


# --- the rules ---------------------------------------------------------------------------------------------------


def _content_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [block for block in content or [] if isinstance(block, dict)]


def _joined_turns(messages: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]], int]]:
    """Consecutive messages of one role joined into one turn, as the API joins them: (role, blocks, first index)."""
    turns: list[tuple[str, list[dict[str, Any]], int]] = []
    for index, message in enumerate(messages):
        role = str(message.get("role", ""))
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(_content_blocks(message))
        else:
            turns.append((role, list(_content_blocks(message)), index))
    return turns


def _is_empty(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return not content.strip()
    if not content:
        return True
    return any(block.get("type") == "text" and not str(block.get("text", "")).strip() for block in content)


def check_model(request: dict[str, Any]) -> CatalogueModel:
    model_id = request.get("model")
    model = catalogue_model(model_id) if isinstance(model_id, str) else None
    if model is None:
        raise RuleBroken("unknown_model", f"model: {model_id!r} is not a model", 404, "not_found_error")
    if model.lifecycle == "retired":
        raise RuleBroken(
            "retired_model", f"model: {model_id} was retired on {model.retires_at}", 404, "not_found_error"
        )
    return model


def check_max_tokens(request: dict[str, Any], model: CatalogueModel) -> None:
    max_tokens = request.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise broken("max_tokens", "max_tokens: a positive integer is required")
    if max_tokens > model.max_tokens:
        raise broken("max_tokens", f"max_tokens: {max_tokens} > {model.max_tokens}, the maximum allowed for {model.id}")


def check_messages(request: dict[str, Any]) -> None:
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise broken("messages_required", "messages: at least one message is required")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            raise broken("message_role", f"messages.{index}.role: must be 'user', 'assistant' or 'system'")
        # A system message inside the conversation (the SDK's SystemMessageParam, which today's Claude Code sends)
        # carries text only: a string or text blocks.
        if message["role"] == "system" and not all(block.get("type") == "text" for block in _content_blocks(message)):
            raise broken("system_message_text", f"messages.{index}.content: a system message holds text blocks only")
    if messages[0]["role"] != "user":
        raise broken("first_message_user", "messages.0.role: the first message must use the 'user' role")
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if index == last and message["role"] == "assistant":
            continue  # a final assistant message may be empty (a prefill)
        if _is_empty(message):
            raise broken(
                "nonempty_message",
                f"messages.{index}: all messages must have non-empty content except for the optional final "
                "assistant message (text content blocks must be non-empty)",
            )


def check_tool_pairing(request: dict[str, Any]) -> None:
    turns = _joined_turns(request["messages"])
    for position, (role, blocks, first_index) in enumerate(turns):
        if role != "assistant":
            continue
        uses = [block for block in blocks if block.get("type") == "tool_use"]
        if not uses:
            continue
        ids = [str(block.get("id", "")) for block in uses]
        following = turns[position + 1] if position + 1 < len(turns) else None
        if following is None:
            raise broken(
                "tool_use_answered",
                f"messages.{first_index}: tool_use ids were found without tool_result blocks immediately after: "
                + ", ".join(map(str, ids)),
            )
        results = [block for block in following[1] if block.get("type") == "tool_result"]
        answered = [str(block.get("tool_use_id", "")) for block in results]
        missing = [tool_id for tool_id in ids if tool_id not in answered]
        if missing:
            raise broken(
                "tool_use_answered",
                f"messages.{following[2]}: tool_use ids were found without tool_result blocks immediately after: "
                + ", ".join(map(str, missing)),
            )
        duplicated = sorted({tool_id for tool_id in answered if answered.count(tool_id) > 1})
        if duplicated:
            raise broken(
                "tool_use_answered", f"messages.{following[2]}: more than one tool_result for {', '.join(duplicated)}"
            )
        kinds = [block.get("type") for block in following[1]]
        if kinds[: len(results)] != ["tool_result"] * len(results):
            raise broken(
                "tool_results_first",
                f"messages.{following[2]}: tool_result blocks must come first in the user message, before any other "
                "content",
            )
        orphans = [tool_id for tool_id in answered if tool_id not in ids]
        if orphans:
            raise broken(
                "tool_result_orphan",
                f"messages.{following[2]}: unexpected tool_use_id found in tool_result blocks: {', '.join(orphans)}; "
                "each tool_result must have a corresponding tool_use in the previous message",
            )
        if answered != ids:
            raise broken(
                "tool_results_in_order",
                f"messages.{following[2]}: tool_result blocks must answer the tool_use blocks in their order",
            )
        toolsets = {block.get("id"): block.get("toolset_name") for block in uses}
        for result in results:
            expected = toolsets.get(result.get("tool_use_id"))
            if expected is not None and result.get("toolset_name") != expected:
                raise broken(
                    "toolset_result_name",
                    f"messages.{following[2]}: the tool_result for {result.get('tool_use_id')} answers a tool of "
                    f"toolset {expected!r} and must carry toolset_name {expected!r}",
                )
    for role, blocks, first_index in turns:
        if role == "user":
            continue
        if any(block.get("type") == "tool_result" for block in blocks):
            raise broken("tool_result_orphan", f"messages.{first_index}: tool_result blocks belong in a user message")
    _, first_blocks, _ = turns[0]
    if any(block.get("type") == "tool_result" for block in first_blocks):
        raise broken("tool_result_orphan", "messages.0: a tool_result has no tool_use before it")


def check_thinking_blocks(request: dict[str, Any], model: CatalogueModel, ledger: ThinkingLedger) -> None:
    for index, message in enumerate(request["messages"]):
        for block in _content_blocks(message):
            if block.get("type") != "thinking":
                continue
            if message["role"] != "assistant":
                raise broken("thinking_signature", f"messages.{index}: thinking blocks belong in assistant turns")
            if set(block) - THINKING_BLOCK_KEYS or not ledger.verifies(model.id, block):
                raise broken(
                    "thinking_signature",
                    f"messages.{index}: a thinking block was modified, or was not issued in a {model.id} "
                    "conversation; thinking blocks must be passed back exactly as received",
                )
    for role, blocks, first_index in _joined_turns(request["messages"]):
        if role != "assistant":
            continue
        sent = _signatures(blocks)
        for position, block in enumerate(blocks):
            if block.get("type") != "tool_use":
                continue
            expected = ledger.expected_before(str(block.get("id")))
            before = _signatures(blocks[:position])
            if expected and not _in_order(expected, before):
                missing = "dropped" if not set(expected) <= set(sent) else "reordered"
                raise broken(
                    "thinking_kept",
                    f"messages.{first_index}: the thinking blocks issued with tool_use {block.get('id')} were "
                    f"{missing}; pass every assistant turn back with its thinking blocks, in order",
                )


def _signatures(blocks: list[dict[str, Any]]) -> list[str]:
    """The signatures of the thinking blocks among `blocks`, in order."""
    return [
        block["signature"]
        for block in blocks
        if block.get("type") == "thinking" and isinstance(block.get("signature"), str)
    ]


def _in_order(expected: tuple[str, ...], seen: list[str]) -> bool:
    iterator = iter(seen)
    return all(any(item == signature for item in iterator) for signature in expected)


def _cache_breakpoints(request: dict[str, Any]) -> int:
    count = 0

    def visit(value: Any) -> None:
        nonlocal count
        if isinstance(value, dict):
            if value.get("cache_control"):
                count += 1
            for key, item in value.items():
                if key != "cache_control":
                    visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    for key in ("tools", "system", "messages"):
        visit(request.get(key))
    return count


def check_limits(request: dict[str, Any], model: CatalogueModel, count_tokens: Callable[[dict[str, Any]], int]) -> None:
    breakpoints = _cache_breakpoints(request)
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        raise broken(
            "cache_control_limit",
            f"a maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided; found {breakpoints}",
        )
    images = _walk_images(request.get("messages"))
    if len(images) > MAX_IMAGES:
        raise broken("image_limit", f"too many images: {len(images)} > {MAX_IMAGES} per request")
    tokens = count_tokens(request)
    if tokens > model.max_input_tokens:
        raise broken("context_window", f"prompt is too long: {tokens} tokens > {model.max_input_tokens} maximum")


def check_options(request: dict[str, Any], model: CatalogueModel) -> None:
    choice = request.get("tool_choice") or {}
    if model.forced_tool_refused and choice.get("type") in ("tool", "any"):
        raise broken(
            "forced_tool_choice",
            f"tool_choice: forcing tool use (type {choice.get('type')!r}) is not supported on {model.id}; use "
            "'auto' or 'none'",
        )
    thinking = request.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind is not None and kind not in model.thinking_types:
        raise broken(
            "thinking_type",
            f"thinking.type: {kind!r} is not supported on {model.id}; it accepts {', '.join(model.thinking_types)}",
        )
    output_config = request.get("output_config")
    if not isinstance(output_config, dict):
        output_config = {}
    effort = output_config.get("effort")
    if kind == "between_tools" and (effort or model.default_effort) not in model.between_tools_efforts:
        raise broken(
            "thinking_effort",
            f"thinking.type 'between_tools' is accepted only at effort {', '.join(model.between_tools_efforts)}",
        )
    if effort is not None and effort not in model.effort_levels:
        levels = ", ".join(model.effort_levels) or "none"
        raise broken("effort_level", f"output_config.effort: {effort!r} is not supported on {model.id} ({levels})")
    if model.sampling_refused:
        for name, default in SAMPLING_DEFAULTS.items():
            value = request.get(name)
            if value is not None and value != default and not (name == "top_p" and value == 1.0):
                raise broken(
                    "sampling_params", f"{name}: sampling parameters cannot be set to non-default values on {model.id}"
                )


def prompt_tokens(request: dict[str, Any]) -> int:
    """The request's rough input size: tools, system and messages at about four characters a token, images by size."""
    return sum(estimate_tokens(request.get(key)) for key in ("tools", "system", "messages") if request.get(key))


def validate(
    request: dict[str, Any],
    ledger: ThinkingLedger,
    *,
    body_bytes: int = 0,
    count_tokens: Callable[[dict[str, Any]], int] | None = None,
) -> Refusal | None:
    """The first rule `request` breaks, or None when the real API would accept it."""
    try:
        if body_bytes > MAX_REQUEST_BYTES:
            raise RuleBroken(
                "request_too_large",
                f"request exceeds the maximum size of {MAX_REQUEST_BYTES} bytes",
                413,
                "request_too_large",
            )
        model = check_model(request)
        check_max_tokens(request, model)
        check_messages(request)
        check_tool_pairing(request)
        check_thinking_blocks(request, model, ledger)
        check_limits(request, model, count_tokens or prompt_tokens)
        check_options(request, model)
    except RuleBroken as rule:
        return dataclasses.replace(rule.refusal, request=request)
    return None
