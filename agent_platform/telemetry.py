"""Traces over OpenTelemetry: one tracer provider per process exporting over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT
is set (nothing is traced otherwise), the trace context carried in Celery messages, and the spans' shapes (a web
request, a model request after the GenAI semantic conventions, a tool call).

Spans leave through a BatchSpanProcessor: a turn only appends to its queue, a background thread exports, and a
collector that is down or slow costs the queue's spans (dropped when it is full), never a run. Attributes are ids,
names, counts, costs and outcomes only: never task or page text, typed values, URLs or messages, which may hold a
run's secrets."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

from celery.signals import before_task_publish, task_postrun, task_prerun, worker_init, worker_shutdown
from django.http import HttpRequest, HttpResponse
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Span, SpanKind, StatusCode

log = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
WEB_SERVICE = "pilothouse-web"
WORKER_SERVICE = "pilothouse-worker"
# At a worker's shutdown: how long the spans still queued may take to leave before they are dropped.
SHUTDOWN_FLUSH_MILLIS = 5000

# The GenAI semantic conventions' names (opentelemetry-semantic-conventions keeps them in a private, deprecated
# module: they moved to the GenAI conventions' own repository, with the same names).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
ERROR_TYPE = "error.type"

_lock = threading.Lock()
_provider: TracerProvider | None = None
_tracer: trace.Tracer = trace.NoOpTracer()


def endpoint_configured() -> bool:
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def configure(service: str, *, endpoint: str | None = None) -> bool:
    """Export this process's spans over OTLP/HTTP: to `endpoint` (a traces URL, `.../v1/traces`), else where the
    standard OTEL_EXPORTER_OTLP_* variables say; without either nothing is traced. Once per process: a second call
    keeps the first provider. True when spans are exported."""
    global _provider, _tracer
    with _lock:
        if _provider is not None:
            return True
        if endpoint is None and not endpoint_configured():
            return False
        # OTEL_RESOURCE_ATTRIBUTES apply, and OTEL_SERVICE_NAME, when set, names the service instead.
        resource = Resource.create({} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service})
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        _provider, _tracer = provider, provider.get_tracer("pilothouse")
    log.info("exporting traces over OTLP/HTTP as %s", resource.attributes.get("service.name"))
    return True


def shutdown() -> None:
    """Send the spans still queued (for at most SHUTDOWN_FLUSH_MILLIS) and stop exporting; later spans are no-ops."""
    global _provider, _tracer
    with _lock:
        provider, _provider = _provider, None
        _tracer = trace.NoOpTracer()
    if provider is not None:
        provider.force_flush(SHUTDOWN_FLUSH_MILLIS)
        provider.shutdown()


def enabled() -> bool:
    return _provider is not None


def tracer() -> trace.Tracer:
    return _tracer


def attributes_of(values: Mapping[str, Any]) -> dict[str, Any]:
    """Span attributes from plain values: None left out, money as a float of dollars."""
    return {
        key: float(value) if isinstance(value, Decimal) else value for key, value in values.items() if value is not None
    }


def failed(span: Span, error: BaseException) -> None:
    """Mark a span failed by the error's type alone: an error's message may quote a page or a secret."""
    span.set_attribute(ERROR_TYPE, type(error).__qualname__)
    span.set_status(StatusCode.ERROR)


@contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None, kind: SpanKind = SpanKind.INTERNAL) -> Iterator[Span]:
    """A span around a block, current within it (the spans the block starts are its children)."""
    with _tracer.start_as_current_span(
        name,
        kind=kind,
        attributes=attributes_of(attributes or {}),
        record_exception=False,  # an exception's text and stack may hold what attributes never carry
        set_status_on_exception=False,
    ) as current:
        try:
            yield current
        except BaseException as error:
            failed(current, error)
            raise


@contextmanager
def detached() -> Iterator[None]:
    """A block outside any trace: the spans it starts begin traces of their own (a worker that took a run in place of
    the one its message named must not file that run under the other's trace)."""
    token = otel_context.attach(otel_context.Context())
    try:
        yield
    finally:
        otel_context.detach(token)


# --- a model request ---------------------------------------------------------------------------------------------


class ModelRequestSpan:
    """One Messages API request as a GenAI `chat` span: started before the request, its answer's usage and stop reason
    set when it arrives, and ended once its cost is known (which, for the agent's requests, is when the run's lane bills
    it, off the critical path), dated to the moment the answer arrived."""

    def __init__(self, *, source: str, model: str, max_tokens: int | None, run_id: str) -> None:
        self.span = _tracer.start_span(
            f"chat {model}",
            kind=SpanKind.CLIENT,
            attributes=attributes_of(
                {
                    OPERATION: "chat",
                    PROVIDER: "anthropic",
                    REQUEST_MODEL: model,
                    REQUEST_MAX_TOKENS: max_tokens,
                    "pilothouse.run.id": run_id,
                    "pilothouse.model_request.source": source,
                }
            ),
        )
        self.answered_ns: int | None = None

    def answered(self, message: Any, tokens: Mapping[str, int]) -> None:
        """The answer arrived: its model, id, stop reason and tokens. The input tokens count the whole prompt (cache
        reads and writes included, as the conventions ask; the API's own input_tokens leaves them out)."""
        self.answered_ns = time.time_ns()
        self.span.set_attributes(
            attributes_of(
                {
                    RESPONSE_MODEL: getattr(message, "model", None),
                    RESPONSE_ID: getattr(message, "id", None),
                    FINISH_REASONS: [message.stop_reason] if getattr(message, "stop_reason", None) else None,
                    INPUT_TOKENS: tokens["input_tokens"]
                    + tokens["cache_read_input_tokens"]
                    + tokens["cache_creation_input_tokens"],
                    OUTPUT_TOKENS: tokens["output_tokens"],
                    CACHE_READ_TOKENS: tokens["cache_read_input_tokens"],
                    CACHE_CREATION_TOKENS: tokens["cache_creation_input_tokens"],
                }
            )
        )

    def failed(self, error: BaseException) -> None:
        failed(self.span, error)
        self.span.end()

    def billed(self, cost_usd: Decimal, *, unpriced: bool, scripted: bool) -> None:
        self.span.set_attributes(
            {
                "pilothouse.cost_usd": float(cost_usd),
                "pilothouse.unpriced": unpriced,
                "pilothouse.scripted": scripted,
            }
        )
        self.span.end(end_time=self.answered_ns)

    @contextmanager
    def current(self) -> Iterator[None]:
        """Within the block, this request's span is the current one (the SDK's own spans, if any, nest under it)."""
        token = otel_context.attach(trace.set_span_in_context(self.span))
        try:
            yield
        finally:
            otel_context.detach(token)


# --- a tool call ---------------------------------------------------------------------------------------------------


class ToolCallSpan:
    """What a tool call's span learns once its result is known."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def answered(self, *, is_error: bool, refused: bool) -> None:
        """`refused`: the runtime did not run the call (after done, on the verdict turn, after a failed action, an
        unknown tool, a truncated reply); otherwise it ran, and `is_error` says whether it failed."""
        outcome = "refused" if refused else "error" if is_error else "ok"
        self.span.set_attributes({"pilothouse.tool.outcome": outcome, "pilothouse.tool.refused": refused})
        if is_error:
            self.span.set_status(StatusCode.ERROR)


@contextmanager
def tool_call(name: str, call_id: str, toolset: str | None) -> Iterator[ToolCallSpan]:
    """An `execute_tool` span around one of the agent's tool calls."""
    with span(
        f"execute_tool {name}",
        {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: call_id,
            TOOL_TYPE: "function",
            "pilothouse.tool.toolset": toolset or None,
        },
    ) as current:
        yield ToolCallSpan(current)


# --- a web request -------------------------------------------------------------------------------------------------


def traced_request(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware: each HTTP request a server span named by its route's pattern (never its values or query string),
    continuing the caller's trace when it sends a traceparent; a run launched within it joins the same trace."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if not enabled():
            return get_response(request)
        parent = propagate.extract(request.headers)
        with _tracer.start_as_current_span(
            request.method or "HTTP",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": request.method or ""},
            record_exception=False,
            set_status_on_exception=False,
        ) as current:
            response = get_response(request)  # Django answers a view's exception with a 500 before it gets here
            match = request.resolver_match
            if match is not None and match.route:
                route = "/" + match.route
                current.update_name(f"{request.method} {route}")
                current.set_attribute("http.route", route)
            current.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 500:
                current.set_status(StatusCode.ERROR)
            return response

    return middleware


# --- the trace context in Celery messages --------------------------------------------------------------------------

_attached: dict[str, object] = {}  # task id → the context token its task_prerun attached


def inject_into_message(headers: dict[str, Any] | None = None, **_signal: Any) -> None:
    """before_task_publish: a task sent within a span carries its context (W3C traceparent) in the message headers,
    so what the worker does continues the sender's trace."""
    if headers is not None and enabled():
        propagate.inject(headers)


def continue_from_message(task_id: str | None = None, task: Any = None, **_signal: Any) -> None:
    """task_prerun: the task runs within the context its message carries (Celery makes a message's headers
    attributes of the task's request)."""
    if not enabled() or task_id is None or task is None:
        return
    carrier = {name: getattr(task.request, name, None) for name in ("traceparent", "tracestate")}
    carrier = {name: value for name, value in carrier.items() if isinstance(value, str)}
    if carrier:
        _attached[task_id] = otel_context.attach(propagate.extract(carrier))


def leave_message_context(task_id: str | None = None, **_signal: Any) -> None:
    token = _attached.pop(task_id or "", None)
    if token is not None:
        otel_context.detach(token)  # type: ignore[arg-type]


def configure_worker(**_signal: Any) -> None:
    configure(WORKER_SERVICE)


def shutdown_worker(**_signal: Any) -> None:
    shutdown()


before_task_publish.connect(inject_into_message, weak=False)
task_prerun.connect(continue_from_message, weak=False)
task_postrun.connect(leave_message_context, weak=False)
# A worker exports as pilothouse-worker from its start; its queued spans leave (bounded) when it stops.
worker_init.connect(configure_worker, weak=False)
worker_shutdown.connect(shutdown_worker, weak=False)
