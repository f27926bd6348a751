"""A small threaded HTTP server that answers the Anthropic Messages API wire format from a Python responder."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import socket
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .catalogue import catalogue_model, models_page
from .validation import MAX_REQUEST_BYTES, Refusal, ThinkingLedger, estimate_tokens, validate

logger = logging.getLogger(__name__)

# The API only looks this many content blocks back from a breakpoint for an earlier cache entry.
CACHE_LOOKBACK_BLOCKS = 20
# The minimum cacheable prompt of a model the catalogue does not know.
DEFAULT_CACHE_MIN_TOKENS = 1024
MODEL_PATH = re.compile(r"^/v1/models/(?P<model_id>[^/]+)$")


@dataclass(frozen=True)
class WireError:
    """An error the server answers instead of a message: an HTTP status with an Anthropic error body.

    `drop_connection` closes the socket without any response (the SDK sees a connection error);
    `delay_seconds` waits first, which is also how a test provokes a client timeout.
    """

    status: int = 529
    error_type: str = "overloaded_error"
    message: str = "Overloaded"
    delay_seconds: float = 0.0
    drop_connection: bool = False
    retry_after_seconds: float | None = None

    def body(self) -> dict[str, Any]:
        return {"type": "error", "error": {"type": self.error_type, "message": self.message}}


Reply = dict[str, Any] | WireError
Responder = Callable[[dict[str, Any]], Reply]


@dataclass
class WireRequest:
    """One request as the server received it, kept for tests that assert on headers or paths."""

    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]


def new_message_id() -> str:
    return "msg_" + uuid.uuid4().hex[:24]


def new_tool_use_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


def thinking_block(text: str) -> dict[str, Any]:
    """A thinking block for a scripted reply; the server signs it, and empties its text unless the request's
    `thinking` asks for it to be shown (`display` summarized or updates, or `between_tools`)."""
    return {"type": "thinking", "thinking": text}


def _message(content: list[dict[str, Any]], stop_reason: str, usage: dict[str, int] | None) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
    }
    if usage is not None:
        reply["usage"] = usage
    return reply


def _thinking(thinking: str | list[str] | None) -> list[dict[str, Any]]:
    if thinking is None:
        return []
    return [thinking_block(text) for text in ([thinking] if isinstance(thinking, str) else thinking)]


def text_reply(
    text: str,
    *,
    usage: dict[str, int] | None = None,
    stop_reason: str = "end_turn",
    thinking: str | list[str] | None = None,
) -> dict[str, Any]:
    """A message holding one text block (after thinking blocks, if given); usage defaults to what the server
    computes from the request."""
    return _message([*_thinking(thinking), {"type": "text", "text": text}], stop_reason, usage)


def json_reply(
    value: Any, *, thinking: str | list[str] | None = None, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    """A structured-output answer: the text is `value` as JSON, as a request with `output_config.format` gets it."""
    return text_reply(json.dumps(value), thinking=thinking, usage=usage)


def tool_use_block(
    name: str, input: dict[str, Any], *, toolset_name: str | None = None, id: str | None = None
) -> dict[str, Any]:
    """One tool_use content block; a toolset member (e.g. the browser's `navigate`) carries `toolset_name`."""
    block: dict[str, Any] = {"type": "tool_use", "id": id or new_tool_use_id(), "name": name, "input": input}
    if toolset_name is not None:
        block["toolset_name"] = toolset_name
    return block


def tool_use_reply(
    name: str,
    input: dict[str, Any],
    *,
    toolset_name: str | None = None,
    text: str | None = None,
    usage: dict[str, int] | None = None,
    thinking: str | list[str] | None = None,
) -> dict[str, Any]:
    """A message that calls one tool, optionally after thinking and a short text block, as the model does."""
    return multi_tool_use_reply(
        [tool_use_block(name, input, toolset_name=toolset_name)], text=text, usage=usage, thinking=thinking
    )


def multi_tool_use_reply(
    blocks: list[dict[str, Any]],
    *,
    text: str | None = None,
    usage: dict[str, int] | None = None,
    thinking: str | list[str] | None = None,
) -> dict[str, Any]:
    """A message with several tool_use blocks (parallel tool use): the client answers all of them in one turn."""
    content = _thinking(thinking)
    if text:
        content.append({"type": "text", "text": text})
    content.extend(blocks)
    return _message(content, "tool_use", usage)


def max_tokens_reply(
    *,
    text: str | None = None,
    tool: dict[str, Any] | None = None,
    thinking: str | list[str] | None = None,
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A reply cut off by `max_tokens`: its text, and a tool call whose input was cut short (pass the partial
    input, e.g. `tool_use_block("navigate", {})`), must not be executed."""
    content = _thinking(thinking)
    if text:
        content.append({"type": "text", "text": text})
    if tool is not None:
        content.append(tool)
    return _message(content, "max_tokens", usage)


def refusal_reply(text: str | None = None, *, usage: dict[str, int] | None = None) -> dict[str, Any]:
    """The model declined (`stop_reason: refusal`), with whatever text it wrote before stopping, if any."""
    return _message([{"type": "text", "text": text}] if text else [], "refusal", usage)


def empty_reply(*, usage: dict[str, int] | None = None) -> dict[str, Any]:
    """`end_turn` with no content at all, which the model sometimes answers after a tool result."""
    return _message([], "end_turn", usage)


def error_reply(
    status: int = 529,
    type: str = "overloaded_error",
    message: str = "Overloaded",
    *,
    delay_seconds: float = 0.0,
    retry_after_seconds: float | None = None,
) -> WireError:
    return WireError(
        status=status,
        error_type=type,
        message=message,
        delay_seconds=delay_seconds,
        retry_after_seconds=retry_after_seconds,
    )


def rate_limited(retry_after_seconds: float = 1.0) -> WireError:
    """429 with `retry-after`, as the API answers a rate limit."""
    return error_reply(
        429, "rate_limit_error", "Number of request tokens has exceeded your rate limit",
        retry_after_seconds=retry_after_seconds,
    )  # fmt: skip


def overloaded(retry_after_seconds: float = 1.0) -> WireError:
    """529 with `retry-after`, as the API answers when it is overloaded."""
    return error_reply(529, "overloaded_error", "Overloaded", retry_after_seconds=retry_after_seconds)


def dropped_connection(delay_seconds: float = 0.0) -> WireError:
    return WireError(status=0, error_type="", message="", delay_seconds=delay_seconds, drop_connection=True)


# --- token estimation and the prompt-cache simulation ---------------------------------------------------


def _strip_cache_control(value: Any) -> Any:
    # A breakpoint marker must not change the hash of the content it marks, or moving it would miss the cache.
    if isinstance(value, dict):
        return {k: _strip_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_cache_control(v) for v in value]
    return value


@dataclass
class _PromptBlock:
    tokens: int
    digest: str  # chained hash of everything up to and including this block
    breakpoint: bool


def _prompt_blocks(request: dict[str, Any]) -> list[_PromptBlock]:
    """The request's cacheable units in the API's prefix order: tools, then system, then message content."""
    units: list[Any] = []
    for tool in request.get("tools") or []:
        units.append(tool)
    system = request.get("system")
    if isinstance(system, str) and system:
        units.append({"type": "text", "text": system})
    elif isinstance(system, list):
        units.extend(system)
    for message in request.get("messages") or []:
        content = message.get("content")
        role = message.get("role")
        if isinstance(content, str):
            units.append({"role": role, "type": "text", "text": content})
        else:
            for block in content or []:
                units.append({"role": role, **block} if isinstance(block, dict) else block)
    chained = hashlib.sha256(str(request.get("model", "")).encode())
    blocks = []
    for unit in units:
        stripped = _strip_cache_control(unit)
        chained.update(json.dumps(stripped, sort_keys=True, separators=(",", ":")).encode())
        blocks.append(
            _PromptBlock(
                tokens=estimate_tokens(stripped) + 3,
                digest=chained.copy().hexdigest(),
                breakpoint=isinstance(unit, dict) and bool(unit.get("cache_control")),
            )
        )
    return blocks


def prompt_tokens(request: dict[str, Any]) -> int:
    """The estimated input size of a request, the same number an uncached request reports."""
    return sum(block.tokens for block in _prompt_blocks(request)) + 3


class PromptCache:
    """Remembers prefixes written at cache_control breakpoints and prices later requests that reuse them."""

    def __init__(self, min_cacheable_tokens: int | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: set[str] = set()
        # None: each model's own minimum from the catalogue (512 tokens on Sonnet 5.5, 1,024 on the others).
        self.min_cacheable_tokens = min_cacheable_tokens

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def minimum_for(self, model_id: str) -> int:
        if self.min_cacheable_tokens is not None:
            return self.min_cacheable_tokens
        model = catalogue_model(model_id)
        return model.cache_min_tokens if model else DEFAULT_CACHE_MIN_TOKENS

    def input_usage(self, request: dict[str, Any]) -> dict[str, int]:
        blocks = _prompt_blocks(request)
        cumulative = []
        running = 0
        for block in blocks:
            running += block.tokens
            cumulative.append(running)
        total = running + 3
        breakpoints = [i for i, block in enumerate(blocks) if block.breakpoint]
        if not breakpoints:
            return {"input_tokens": max(total, 1), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        last = breakpoints[-1]
        cached_through = cumulative[last]
        if cached_through < self.minimum_for(str(request.get("model", ""))):
            return {"input_tokens": max(total, 1), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        with self._lock:
            read = 0
            # The longest earlier prefix wins: every explicit breakpoint, plus the block boundaries just before each.
            candidates: set[int] = set()
            for bp in breakpoints:
                candidates.update(range(max(0, bp - CACHE_LOOKBACK_BLOCKS), bp + 1))
            for index in sorted(candidates, reverse=True):
                if blocks[index].digest in self._entries:
                    read = cumulative[index]
                    break
            for bp in breakpoints:
                self._entries.add(blocks[bp].digest)
        return {
            "input_tokens": max(total - cached_through, 1),
            "cache_creation_input_tokens": cached_through - read,
            "cache_read_input_tokens": read,
        }


# --- the HTTP server -----------------------------------------------------------------------------------


class WireServer:
    """Serves `POST /v1/messages`, `POST /v1/messages/count_tokens` and the Models API on 127.0.0.1.

    Every Messages request is first checked against the API's rules (scripted_api.validation): a request the
    real API would refuse is answered with its error, the rule's name first in the message, and kept in
    `refusals`. The others go to `responder`, which gets the parsed request body and returns a message body
    (missing id, model and usage are filled in here, thinking blocks signed) or a WireError. Requests are handled
    on their own threads.
    """

    def __init__(
        self,
        responder: Responder,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        prompt_cache: PromptCache | None = None,
        thinking_secret: bytes | None = None,
    ) -> None:
        self.responder = responder
        self.host = host
        self.port = port
        self.prompt_cache = prompt_cache or PromptCache()
        self.thinking = ThinkingLedger(thinking_secret or secrets.token_bytes(32))
        self.received: list[WireRequest] = []
        self.refusals: list[Refusal] = []
        # The paths of the Models API requests served, for tests that check what is cached.
        self.model_lookups: list[str] = []
        self._received_lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("the wire server is not started")
        return f"http://{self.host}:{self._httpd.server_address[1]}"

    def start(self) -> WireServer:
        if self._httpd is not None:
            return self
        handler = type("BoundWireHandler", (_WireHandler,), {"wire": self})
        self._httpd = ThreadingHTTPServer((self.host, self.port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="messages-wire", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def record(self, request: WireRequest) -> None:
        with self._received_lock:
            self.received.append(request)

    def refuse(self, refusal: Refusal) -> None:
        logger.warning("messages wire refused a request: %s", refusal.full_message)
        with self._received_lock:
            self.refusals.append(refusal)

    def clear_refusals(self) -> None:
        with self._received_lock:
            self.refusals.clear()

    def complete_message(self, request: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
        """Fill what a scripted reply left out the way the API would: id, model, usage, and signed thinking."""
        message = {
            "id": new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude-scripted"),
            "stop_sequence": None,
            **reply,
        }
        content = [dict(block) for block in message.get("content") or []]
        message.setdefault("stop_reason", _stop_reason_for(content))
        usage = dict(message.get("usage") or {})
        if not {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} <= usage.keys():
            computed = self.prompt_cache.input_usage(request)
            for key, value in computed.items():
                usage.setdefault(key, value)
        # Thinking is billed as output whether or not its text is shown.
        usage.setdefault("output_tokens", max(estimate_tokens(content), 1))
        message["usage"] = usage
        message["content"] = self._issue_thinking(request, content)
        return message

    def _issue_thinking(self, request: dict[str, Any], content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Thinking blocks as the request's `thinking` settings return them, signed for this model."""
        shown = thinking_shown(request)
        model = str(request.get("model", ""))
        issued = []
        for block in content:
            if block.get("type") == "thinking" and not block.get("signature"):
                if shown is None:
                    continue  # thinking is off for this request: the model does not think
                text = block.get("thinking", "") if shown else ""
                block = {"type": "thinking", "thinking": text, "signature": self.thinking.sign(model, text)}
            issued.append(block)
        self.thinking.issued(issued)
        return issued


def thinking_shown(request: dict[str, Any]) -> bool | None:
    """Whether a request gets its thinking text back (True), blocks with empty text (False), or none (None: off).

    `between_tools` returns the progress text the model writes between tool calls; adaptive or enabled thinking
    returns text only with `display` summarized or updates (the default on today's models is to omit it); no
    `thinking` at all means the model's default, which is adaptive on a model that cannot turn thinking off.
    """
    thinking = request.get("thinking")
    if not isinstance(thinking, dict):
        thinking = {}
    kind = thinking.get("type")
    if kind == "between_tools":
        return True
    if kind in ("adaptive", "enabled"):
        return thinking.get("display") in ("summarized", "updates")
    if kind == "disabled":
        return None
    model = catalogue_model(str(request.get("model", "")))
    if model is not None and "disabled" not in model.thinking_types:
        return False
    return None


def _stop_reason_for(content: list[dict[str, Any]]) -> str:
    return "tool_use" if any(block.get("type") == "tool_use" for block in content) else "end_turn"


def sse_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The streaming events that add up to `message`, in the order the API sends them."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message.get("content") or []):
        if block.get("type") == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {**block, "text": ""}},
            )
            text = block.get("text", "")
            for offset in range(0, len(text), 40):
                delta = {"type": "text_delta", "text": text[offset : offset + 40]}
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        elif block.get("type") == "thinking":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "thinking": "", "signature": ""},
                },
            )
            text = block.get("thinking", "")
            for offset in range(0, len(text), 40):
                delta = {"type": "thinking_delta", "thinking": text[offset : offset + 40]}
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
            delta = {"type": "signature_delta", "signature": block.get("signature", "")}
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        elif block.get("type") == "tool_use":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}},
            )
            partial = json.dumps(block.get("input") or {})
            for offset in range(0, len(partial), 40):
                delta = {"type": "input_json_delta", "partial_json": partial[offset : offset + 40]}
                yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": message.get("stop_sequence")},
            "usage": {"output_tokens": usage.get("output_tokens", 0)},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class _WireHandler(BaseHTTPRequestHandler):
    wire: WireServer
    protocol_version = "HTTP/1.1"
    server_version = "pilothouse-messages-wire/1"

    def log_message(self, format: str, *args: Any) -> None:  # the stdlib's signature, `format` included
        logger.debug("messages wire: " + format, *args)  # noqa: G003 (the stdlib's own %-format, formatted lazily)

    def do_POST(self) -> None:  # the stdlib's name
        path = urlsplit(self.path).path.rstrip("/")
        try:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            body = json.loads(raw or b"{}") if length <= MAX_REQUEST_BYTES else {}
        except (ValueError, json.JSONDecodeError) as exc:
            self._send_json(400, WireError(400, "invalid_request_error", f"body is not JSON: {exc}").body())
            return
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": prompt_tokens(body)})
            return
        if path != "/v1/messages":
            self._send_json(404, WireError(404, "not_found_error", f"no route for POST {path}").body())
            return
        self.wire.record(
            WireRequest(
                path=self.path, headers={name.lower(): value for name, value in self.headers.items()}, body=body
            )
        )
        refusal = validate(body, self.wire.thinking, body_bytes=length, count_tokens=prompt_tokens)
        if refusal is not None:
            self.wire.refuse(refusal)
            self._send_error(WireError(refusal.status, refusal.error_type, refusal.full_message))
            return
        try:
            reply = self.wire.responder(body)
        except Exception:
            # A broken script must fail the test that ran it loudly, not hang it; 500 with the traceback does that.
            trace = "messages responder raised:\n" + traceback.format_exc()
            logger.error(trace)
            reply = WireError(500, "api_error", trace)
        if isinstance(reply, WireError):
            self._send_error(reply)
            return
        message = self.wire.complete_message(body, reply)
        if body.get("stream"):
            self._send_stream(message)
        else:
            self._send_json(200, message)

    def do_GET(self) -> None:  # the stdlib's name
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/")
        with self.wire._received_lock:
            self.wire.model_lookups.append(path)
        if path == "/v1/models":
            query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
            try:
                limit = min(max(int(query.get("limit", 20)), 1), 1000)
            except ValueError:
                limit = 20
            page = models_page(limit=limit, after_id=query.get("after_id"), before_id=query.get("before_id"))
            self._send_json(200, page)
            return
        match = MODEL_PATH.match(path)
        if match:
            model = catalogue_model(match.group("model_id"))
            if model is None:
                message = f"model: {match.group('model_id')}"
                self._send_json(404, WireError(404, "not_found_error", message).body())
            else:
                self._send_json(200, model.model_info())
            return
        self._send_json(404, WireError(404, "not_found_error", f"no route for GET {self.path}").body())

    def _send_error(self, error: WireError) -> None:
        if error.delay_seconds:
            time.sleep(error.delay_seconds)
        if error.drop_connection:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        headers = {}
        if error.retry_after_seconds is not None:
            # The API sends both; the SDK prefers the millisecond one.
            headers["retry-after-ms"] = str(int(error.retry_after_seconds * 1000))
            headers["retry-after"] = str(max(int(error.retry_after_seconds + 0.999), 0))
        self._send_json(error.status, error.body(), headers)

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, message: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_" + uuid.uuid4().hex[:24])
        # No content-length on a stream: closing the connection marks its end.
        self.send_header("connection", "close")
        self.close_connection = True
        self.end_headers()
        for event, data in sse_events(message):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
