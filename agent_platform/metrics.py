"""Prometheus metrics: what each process measures where it happens, what the database knows read at scrape time, the
bearer-token check, and the worker's own endpoint (docs/metrics.md says why the two halves are split this way).

Labels are bounded by design: model, source, status, error_code and outcome only. A run's task, URL, id or
workspace never becomes a label (nor anything a user typed), so neither a secret nor the cardinality can leak in.
"""

from __future__ import annotations

import copy
import hmac
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Sum
from django.utils import timezone
from django.utils.module_loading import import_string
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, ThreadingWSGIServer

from .models import ModelRequest, ModelRequestQuerySet

log = logging.getLogger(__name__)

# --- measured in the process where it happens (the worker's, except live viewers: the web's) ----------------------

# A browser step is one browser action of the agent (a member call through the SDK toolset), as bench/step_speed.py
# measures it: most take tens of milliseconds, a navigation up to the action timeout.
STEP_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
MODEL_BUCKETS = (0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300)
QUEUE_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)

step_duration = Histogram(
    "pilothouse_step_duration_seconds", "Duration of one browser action of an agent.", buckets=STEP_BUCKETS
)
model_request_duration = Histogram(
    "pilothouse_model_request_duration_seconds",
    "Duration of one Messages API call (its retries included), by model, source and outcome (ok or error).",
    ["model", "source", "outcome"],
    buckets=MODEL_BUCKETS,
)
queue_wait = Histogram(
    "pilothouse_run_queue_wait_seconds",
    "Time from a run's launch to a worker claiming it (a follow-up's wait behind its session's earlier run included).",
    buckets=QUEUE_BUCKETS,
)
browser_contexts_open = Gauge("pilothouse_browser_contexts_open", "Browser contexts open in this worker process.")
egress_refusals = Counter(
    "pilothouse_egress_refusals", "Requests of an agent's browser the network policy refused (route, navigate, proxy)."
)
live_viewers = Gauge("pilothouse_live_viewers", "Live-view sockets open on this web process.")


# --- read from the database at scrape time (the installation's numbers, the same from every web process) -----------

# Each app says what it knows, by dotted path (this package imports no app: docs/architecture.md).
DATABASE_COLLECTORS = (
    "agent_platform.metrics.model_request_families",
    "runs.metrics.run_families",
    "runs.metrics.workspace_queue_families",
    "webhooks.metrics.delivery_families",
)
CACHE_KEY = "metrics:database-families"


# Model requests are append-only and the biggest table (about ten rows a run), so their totals are kept, not
# recomputed: rows older than SETTLED_AFTER (committed long since: a turn's lane commits its row within seconds) are
# folded once into totals kept in the shared cache; each scrape adds only the rows since then, through the index on
# created_at. A deleted row stays counted (a counter never goes down) until the kept totals are lost and recomputed.
SETTLED_AFTER = timedelta(minutes=5)
SETTLED_KEY = "metrics:model-requests-settled"
SETTLED_TTL_SECONDS = 24 * 3600
Totals = dict[tuple[str, str], list[Decimal]]  # (model, source) -> requests, cost, input, output, cache read, write


def _request_totals(rows: ModelRequestQuerySet, into: Totals) -> Totals:
    """Add the rows' sums by model and source to `into` (one grouped query)."""
    grouped = (
        rows.order_by()
        .values_list("model", "source")
        .annotate(
            Count("id"),
            Sum("cost_usd"),
            Sum("input_tokens"),
            Sum("output_tokens"),
            Sum("cache_read_input_tokens"),
            Sum("cache_creation_input_tokens"),
        )
    )
    for model, source, *sums in grouped:
        kept = into.setdefault((model, source), [Decimal(0)] * 6)
        for index, value in enumerate(sums):
            kept[index] += Decimal(value or 0)
    return into


def _settled_totals(until: datetime) -> Totals:
    """The totals of the rows created before `until`: the kept ones, brought forward by the rows since they were
    kept; or, when none are kept (first scrape, cache lost), every row once."""
    try:
        kept = cache.get(SETTLED_KEY)
    except Exception:
        kept = None
    if kept is not None and kept["until"] <= until:
        later = ModelRequest.objects.filter(created_at__gte=kept["until"], created_at__lt=until)
        totals = _request_totals(later, kept["totals"])
    else:
        totals = _request_totals(ModelRequest.objects.filter(created_at__lt=until), {})
    try:
        cache.set(SETTLED_KEY, {"until": until, "totals": totals}, timeout=SETTLED_TTL_SECONDS)
    except Exception:
        log.info("metrics: the settled request totals were not kept", exc_info=True)
    return totals


def model_request_families() -> Iterator[Metric]:
    """Tokens, cost and requests by model and source over every ModelRequest row: the settled totals, and the
    recent rows read now."""
    until = timezone.now() - SETTLED_AFTER
    totals = _request_totals(ModelRequest.objects.filter(created_at__gte=until), copy.deepcopy(_settled_totals(until)))
    labels = ["model", "source"]
    requests = CounterMetricFamily(
        "pilothouse_model_requests", "Messages API calls recorded, by model and source.", labels=labels
    )
    cost = CounterMetricFamily(
        "pilothouse_model_cost_usd", "Cost of the recorded calls in US dollars, by model and source.", labels=labels
    )
    tokens = [
        CounterMetricFamily(f"pilothouse_model_{kind}_tokens", f"{what}, by model and source.", labels=labels)
        for kind, what in (
            ("input", "Input tokens billed"),
            ("output", "Output tokens billed"),
            ("cache_read", "Prompt-cache read tokens billed"),
            ("cache_write", "Prompt-cache write tokens billed"),
        )
    ]
    for (model, source), (count, dollars, *sums) in sorted(totals.items()):
        requests.add_metric([model, source], float(count))
        cost.add_metric([model, source], float(dollars))
        for family, total in zip(tokens, sums, strict=True):
            family.add_metric([model, source], float(total))
    yield from (requests, cost, *tokens)


def database_families() -> list[Metric]:
    """Every app's families, computed at most once per METRICS_CACHE_SECONDS for the whole installation: kept in the
    shared cache, so N web processes and several scrapers cost one set of grouped queries per period."""
    seconds = settings.METRICS_CACHE_SECONDS
    if seconds > 0:
        try:
            cached = cache.get(CACHE_KEY)
        except Exception:  # Redis away: the scrape still answers, from the database
            cached = None
        if cached is not None:
            return list(cached)
    families = [family for path in DATABASE_COLLECTORS for family in import_string(path)()]
    if seconds > 0:
        try:
            cache.set(CACHE_KEY, families, timeout=seconds)
        except Exception:
            log.info("metrics: the database families were not cached", exc_info=True)
    return families


class _Families:
    """A collector over families computed elsewhere (prometheus_client's registry takes collectors, not lists)."""

    def __init__(self, produce: Callable[[], Iterable[Metric]]) -> None:
        self.produce = produce

    def collect(self) -> Iterable[Metric]:
        return self.produce()


def web_exposition() -> bytes:
    """What the web's /metrics answers: this process's metrics and the database's families."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(REGISTRY.collect))
    registry.register(_Families(database_families))
    return generate_latest(registry)


# --- who may read them ----------------------------------------------------------------------------------------------


def authorization_status(header: str) -> int:
    """200 when the Authorization header carries METRICS_TOKEN (compared in constant time), 401 when it carries no
    bearer token, 403 for another one. The caller answers 404 when no token is configured."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return 401
    expected = settings.METRICS_TOKEN.encode()
    return 200 if hmac.compare_digest(token.strip().encode(), expected) else 403


REFUSALS = {401: b"A bearer token is required.\n", 403: b"The bearer token is not the metrics token.\n"}


# --- the worker's own endpoint -----------------------------------------------------------------------------------


def worker_application(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """A WSGI application serving this process's registry at /metrics, behind the same bearer token."""
    if environ.get("PATH_INFO") != "/metrics":
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"Not found: the metrics are at /metrics.\n"]
    status = authorization_status(environ.get("HTTP_AUTHORIZATION", ""))
    if status != 200:
        reason = "401 Unauthorized" if status == 401 else "403 Forbidden"
        start_response(reason, [("Content-Type", "text/plain"), ("WWW-Authenticate", "Bearer")])
        return [REFUSALS[status]]
    start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
    return [generate_latest(REGISTRY)]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would drown the worker's log."""


_endpoint_lock = threading.Lock()
_endpoint: WSGIServer | None = None


def start_worker_endpoint() -> WSGIServer | None:
    """Serve this process's metrics on WORKER_METRICS_ADDRESS:WORKER_METRICS_PORT in a daemon thread (once per
    process). Nothing without a port or a token; a port already taken is logged, never fatal to the worker."""
    global _endpoint
    port, token = settings.WORKER_METRICS_PORT, settings.METRICS_TOKEN
    if not port or not token:
        return None
    with _endpoint_lock:
        if _endpoint is not None:
            return _endpoint
        try:
            server = make_server(
                settings.WORKER_METRICS_ADDRESS, port, worker_application, ThreadingWSGIServer, _QuietHandler
            )
        except OSError as error:
            log.warning("metrics: port %s is not available (%s); this worker serves no metrics", port, error)
            return None
        threading.Thread(target=server.serve_forever, name="metrics-endpoint", daemon=True).start()
        _endpoint = server
    log.info("metrics served on %s:%s/metrics", settings.WORKER_METRICS_ADDRESS, port)
    return server
