"""A run's Messages API calls and their record: the call (through agent_platform.llm's client) and its span, its
ModelRequest row, the run's totals, and the agent.usage event; and a whole agent turn's record (that request, the turn's events and the
run's signals) in one transaction."""

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

import anthropic
from anthropic.types.beta import BetaMessage
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agent_platform import db, metrics
from agent_platform.billing import Charge, charge
from agent_platform.llm import ModelUnavailable, client, describe
from agent_platform.models import ModelRequest
from agent_platform.telemetry import ModelRequestSpan

from .events import emit, emit_many
from .models import Run

log = logging.getLogger(__name__)


def _field(source: Any, name: str) -> Any:
    return source.get(name) if isinstance(source, dict) else getattr(source, name, None)


@dataclass(frozen=True)
class Tokens:
    """What one Messages API call reports of its tokens, read once from the SDK's usage object (or its dict form)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    one_hour_cache_write: int = 0  # of the cache writes, those with the 1-hour lifetime (priced apart)
    speed: str | None = None

    @property
    def prompt(self) -> int:
        """The prompt the request sent: input, cache read and cache write."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    def counts(self) -> dict[str, int]:
        """The four counts by the API's names, as ModelRequest, billing and the spec's usage object name them."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


def read_usage(usage: Any) -> Tokens:
    """The one reader of the SDK's usage object: every count a missing or null field leaves is 0."""

    def count(source: Any, name: str) -> int:
        return int(_field(source, name) or 0)

    cache_creation = _field(usage, "cache_creation")
    return Tokens(
        input_tokens=count(usage, "input_tokens"),
        output_tokens=count(usage, "output_tokens"),
        cache_read_input_tokens=count(usage, "cache_read_input_tokens"),
        cache_creation_input_tokens=count(usage, "cache_creation_input_tokens"),
        one_hour_cache_write=count(cache_creation, "ephemeral_1h_input_tokens") if cache_creation else 0,
        speed=_field(usage, "speed") or None,
    )


def compaction_iterations(usage: Any) -> list[Any]:
    """Server-side compaction's own sampling steps, which the API reports in usage.iterations (each a usage)."""
    return [item for item in (_field(usage, "iterations") or []) if _field(item, "type") == "compaction"]


@dataclass(frozen=True)
class Answered:
    """A model request that was answered, not yet recorded: what `record_turn` needs to bill it."""

    source: str
    model: str
    usage: Any
    at: datetime
    span: ModelRequestSpan | None = None  # the request's span, ended once it is billed


def record_turn(
    run: Run,
    *,
    answered: Answered | None = None,
    events: Sequence[tuple[str, dict[str, Any], datetime]] = (),
    signals: dict[str, Any] | None = None,
    compactions: Sequence[Answered] = (),
) -> None:
    """One agent turn's record in one transaction: the model requests that produced it (the server's compaction
    steps, then the request itself: their agent.usage events first, their rows and the run's totals), the turn's
    events with their seqs taken at once, and the run's signals."""
    billed = [_bill(run, compaction) for compaction in compactions]
    if answered is not None:
        billed.append(_bill(run, answered))
    items = [("agent.usage", event, request.created_at) for request, _totals, event in billed]
    with transaction.atomic():
        emit_many(run, [*items, *events])
        changes = [totals for _request, totals, _event in billed]
        if signals is not None:
            changes = [*changes[:-1], {**(changes[-1] if changes else {}), "signals": signals}]
        for change in changes:
            Run.objects.filter(pk=run.pk).update(**change)
        # The requests last: each adds to its workspace's day in the rollup (ModelRequest.save), a row every turn of
        # the workspace's runs updates, so its lock is held only from here to the commit.
        for request, _totals, _event in billed:
            request.save()
    if answered is not None and answered.span is not None:
        request = billed[-1][0]
        answered.span.billed(request.cost_usd, unpriced=request.unpriced, scripted=request.scripted)


def _bill(run: Run, answered: Answered) -> tuple[ModelRequest, dict[str, Any], dict[str, Any]]:
    """The unsaved ModelRequest row of an answered request, the run-total increments and the agent.usage data."""
    source, model, now = answered.source, answered.model, answered.at
    read = read_usage(answered.usage)
    speed = read.speed or "standard"
    tokens = read.counts()
    # The client's configuration says who answers: the scripted demo model's requests cost nothing and say so.
    scripted = settings.SCRIPTED_MODEL
    billed = (
        Charge(None, Decimal(0))
        if scripted
        else charge(model, speed, now, one_hour_cache_write=read.one_hour_cache_write, **tokens)
    )
    price, cost = billed.price, billed.cost_usd
    request = ModelRequest(
        workspace_id=run.workspace_id,
        run=run,
        source=source,
        model=model,
        speed=speed,
        cost_usd=cost,
        price=price,
        unpriced=price is None and not scripted,
        scripted=scripted,
        created_at=now,
        **tokens,
    )
    totals = {
        "usage_requests": F("usage_requests") + 1,
        "usage_input": F("usage_input") + tokens["input_tokens"],
        "usage_output": F("usage_output") + tokens["output_tokens"],
        "usage_cache_read": F("usage_cache_read") + tokens["cache_read_input_tokens"],
        "usage_cache_write": F("usage_cache_write") + tokens["cache_creation_input_tokens"],
        "cost_usd": F("cost_usd") + cost,
    }
    event = {
        "source": source,
        "model": model,
        "speed": speed,
        **tokens,
        "cost_usd": str(cost),
        "unpriced": price is None and not scripted,
        "scripted": scripted,
    }
    return request, totals, event


def record_model_request(run: Run, *, source: str, model: str, usage: Any) -> ModelRequest:
    """Store one model request of `run` (usage as the SDK returned it), add it to the run's totals and emit it."""
    request, totals, event = _bill(run, Answered(source, model, usage, timezone.now()))
    with transaction.atomic():
        request.save()
        Run.objects.filter(pk=run.pk).update(**totals)
        emit(run, "agent.usage", event)
    return request


@dataclass(frozen=True)
class Sent:
    """A model request answered and not yet billed: the reply, and its span, which ends when the request is billed."""

    message: BetaMessage
    span: ModelRequestSpan


def send_message(run: Run, *, source: str, **params: Any) -> Sent:
    """One Messages API call for `run`, not recorded: the caller bills it, and so ends its span (the agent loop bills
    its requests with the turn: record_turn, off the critical path)."""
    db.release()  # no connection held while the model answers (seconds): the process's pool serves the others
    started = time.monotonic()
    requested = str(params.get("model", run.model))
    span = ModelRequestSpan(
        source=source,
        model=requested,
        max_tokens=params.get("max_tokens"),
        run_id=run.public_id,
    )
    try:
        with span.current():
            message: BetaMessage = client().beta.messages.create(**params)
    except anthropic.APIError as error:
        metrics.model_request_duration.labels(requested, source, "error").observe(time.monotonic() - started)
        span.failed(error)
        log.warning("model request for %s failed: %s", run.public_id, describe(error))
        raise ModelUnavailable(describe(error)) from error
    metrics.model_request_duration.labels(requested, source, "ok").observe(time.monotonic() - started)
    span.answered(message, read_usage(message.usage).counts())
    return Sent(message, span)


def create_message(run: Run, *, source: str, **params: Any) -> BetaMessage:
    """One Messages API call for `run`, recorded here whatever the caller does with the answer."""
    sent = send_message(run, source=source, **params)
    message = sent.message
    model = message.model or params.get("model", run.model)
    request = record_model_request(run, source=source, model=model, usage=message.usage)
    sent.span.billed(request.cost_usd, unpriced=request.unpriced, scripted=request.scripted)
    # Server-side compaction summarises the conversation in a sampling step of its own, reported (and billed) in
    # usage.iterations and left out of the top-level usage: each is a request of source compaction.
    for iteration in compaction_iterations(message.usage):
        record_model_request(run, source="compaction", model=model, usage=iteration)
    return message
