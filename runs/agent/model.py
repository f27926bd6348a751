"""The Anthropic client every model request goes through, and the one place a request's usage is recorded."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

import anthropic
from anthropic.types.beta import BetaMessage
from django.conf import settings

from runs.models import Run
from runs.usage import compaction_iterations, record_model_request

if TYPE_CHECKING:
    from agent_platform.llm import ModelProfile

log = logging.getLogger(__name__)


class ModelUnavailable(Exception):
    """The model could not answer: the SDK's retries were exhausted, or the request failed for good."""


def client() -> anthropic.Anthropic:
    """A client with deliberate retries (429, 5xx, 529 and connection errors, with the SDK's backoff) and timeout.

    One per process and configuration: building one loads the CA bundle (~150 ms), and the SDK's client is safe to
    share between the worker's threads.
    """
    return _client_for(
        settings.ANTHROPIC_BASE_URL,
        settings.ANTHROPIC_API_KEY,
        settings.MODEL_MAX_RETRIES,
        settings.MODEL_TIMEOUT_SECONDS,
    )


@functools.lru_cache(maxsize=8)
def _client_for(base_url: str, api_key: str, max_retries: int, timeout_seconds: int) -> anthropic.Anthropic:
    options: dict[str, Any] = {"max_retries": max_retries, "timeout": anthropic.Timeout(timeout_seconds, connect=10.0)}
    if base_url:
        options["base_url"] = base_url
    if api_key:
        options["api_key"] = api_key
    return anthropic.Anthropic(**options)


def describe(error: Exception) -> str:
    """A message an operator understands; never the request (it may hold page content) nor the key."""
    if isinstance(error, anthropic.APIStatusError):
        status = error.status_code
        kind = {529: "overloaded", 429: "rate limited", 500: "failing", 503: "unavailable"}.get(status, "")
        detail = f" ({kind})" if kind else ""
        # The SDK retries these; anything else (a refused request, a bad key) is answered once.
        if status in (408, 409, 429) or status >= 500:
            return f"The model API answered HTTP {status}{detail} after {settings.MODEL_MAX_RETRIES} retries."
        return f"The model API refused the request with HTTP {status}; it was not retried."
    if isinstance(error, anthropic.APITimeoutError):
        return f"The model API did not answer within {settings.MODEL_TIMEOUT_SECONDS}s, retries included."
    if isinstance(error, anthropic.APIConnectionError):
        return "The model API could not be reached (connection failed or dropped), retries included."
    return f"The model request failed: {type(error).__name__}."


def model_profile(model: str) -> ModelProfile | None:
    """The model's profile (agent_platform.llm.ModelProfile) as the Models API describes it, or None when it cannot
    be learnt (the request itself then says what is wrong with the model)."""
    from agent_platform import llm  # noqa: PLC0415 (lazy: profiles builds its lookups on this module's client)

    try:
        return llm.profile(model)
    except (llm.UnknownModel, llm.ProfilesUnavailable) as error:
        log.warning("no profile for model %s: %s", model, error)
        return None


def thinking_param(profile: ModelProfile | None, mode: str) -> dict[str, Any] | None:
    """The request's thinking parameter for the run's thinking mode ("" = the model's default), or None to omit it."""
    from agent_platform import llm  # noqa: PLC0415 (lazy: profiles imports this module's client)

    return None if profile is None else llm.thinking_config(profile, mode)


def create_message(run: Run, *, source: str, record: bool = True, **params: Any) -> BetaMessage:
    """One Messages API call for `run`; its usage is recorded whatever the caller does with the answer, here, or
    by the caller when `record` is false (the agent loop records it with the turn: runs.usage.record_turn)."""
    try:
        message: BetaMessage = client().beta.messages.create(**params)
    except anthropic.APIError as error:
        log.warning("model request for %s failed: %s", run.public_id, describe(error))
        raise ModelUnavailable(describe(error)) from error
    model = message.model or params.get("model", run.model)
    if not record:  # the agent loop records its own requests with the turn, off the critical path, compaction too
        return message
    record_model_request(run, source=source, model=model, usage=message.usage)
    # Server-side compaction summarises the conversation in a sampling step of its own, reported (and billed) in
    # usage.iterations and left out of the top-level usage: each is a request of source compaction.
    for iteration in compaction_iterations(message.usage):
        record_model_request(run, source="compaction", model=model, usage=iteration)
    return message
