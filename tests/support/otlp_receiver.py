"""A real OTLP/HTTP trace receiver on loopback: POST /v1/traces bodies decoded with the opentelemetry-proto types,
and the spans kept for tests to read (with their service, trace, parent and attributes as plain values)."""

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.support.launching import wait_for


def plain(value: AnyValue) -> Any:
    """An attribute's value as Python: a string, bool, int, float, or a list of those."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [plain(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: plain(item.value) for item in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    kind: int
    status_code: int
    attributes: dict[str, Any]


class Receiver:
    """The spans every export delivered so far, in arrival order."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.lock = threading.Lock()
        self.server: http.server.ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        """The base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it (the exporter adds /v1/traces)."""
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_port}"

    def accept(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = []
        for resource_spans in request.resource_spans:
            resource = {item.key: plain(item.value) for item in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            service=resource.get("service.name", ""),
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            name=span.name,
                            kind=span.kind,
                            status_code=span.status.code,
                            attributes={item.key: plain(item.value) for item in span.attributes},
                        )
                    )
        with self.lock:
            self.spans.extend(received)

    def snapshot(self) -> list[ReceivedSpan]:
        with self.lock:
            return list(self.spans)

    def run_span(self, run_id: str, timeout: float = 30) -> ReceivedSpan:
        """The span of run `run_id`, once it arrived (it ends, and is exported, after the run's ending)."""

        def found() -> ReceivedSpan | None:
            return next(
                (
                    span
                    for span in self.snapshot()
                    if span.name.startswith("invoke_agent") and span.attributes.get("pilothouse.run.id") == run_id
                ),
                None,
            )

        return wait_for(found, timeout=timeout, message=f"the span of run {run_id}")

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        return [span for span in self.snapshot() if span.trace_id == trace_id]

    def wait_for_trace(self, trace_id: str, predicate, message: str, timeout: float = 30) -> list[ReceivedSpan]:
        """The trace's spans once `predicate(spans)` holds for them."""

        def ready() -> list[ReceivedSpan] | None:
            spans = self.trace(trace_id)
            return spans if predicate(spans) else None

        return wait_for(ready, timeout=timeout, message=message)


class Handler(http.server.BaseHTTPRequestHandler):
    receiver: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        self.receiver.accept(body)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="session")
def otlp_receiver() -> Iterator[Receiver]:
    """One receiver for the session: the shared worker exports to it, and tests find their runs' traces by run id."""
    receiver = Receiver()
    handler = type("BoundHandler", (Handler,), {"receiver": receiver})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    receiver.server = server
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield receiver
    server.shutdown()
    server.server_close()
