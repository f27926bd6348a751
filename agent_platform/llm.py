"""The one Anthropic client every model request goes through, and what each model can do: its profile, learnt from the
Models API (never from its name) and cached per process. A run's request and its bill: runs.usage.create_message."""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anthropic
from django.conf import settings

log = logging.getLogger(__name__)

# A launch waits on this lookup: fail fast rather than with the agent loop's patient retries.
LOOKUP_TIMEOUT_SECONDS = 10.0
LOOKUP_MAX_RETRIES = 1
# Every effort level the Models API reports a capability for, lowest first (output_config.effort).
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
# Thinking types from the least thinking to the most; "enabled" (a fixed budget) is never chosen for a run.
THINKING_LADDER = ("disabled", "between_tools", "adaptive")
# The `display` that returns the text the model writes between tool calls (the beta thinking config's values are
# summarized | omitted | updates; today's models default to omitting it).
PROGRESS_DISPLAY = "updates"


class UnknownModel(Exception):
    """The Models API does not know this model id (404)."""

    def __init__(self, model: str) -> None:
        super().__init__(f"no model '{model}' in the model catalogue")
        self.model = model


class ProfilesUnavailable(Exception):
    """The Models API could not be asked (unreachable, timing out, or refusing our key)."""


@dataclass(frozen=True)
class ModelProfile:
    """One model as the Models API describes it."""

    id: str
    display_name: str
    max_input_tokens: int | None
    max_tokens: int | None
    lifecycle: str  # active | deprecated | retired
    retires_at: datetime | None
    image_input: bool
    structured_outputs: bool
    thinking_types: tuple[str, ...]
    effort_levels: tuple[str, ...]
    default_effort: str | None  # the Models API does not report it today; None means "the model's own"
    context_management: tuple[str, ...]

    @property
    def retired(self) -> bool:
        return self.lifecycle == "retired"

    @property
    def deprecated(self) -> bool:
        return self.lifecycle == "deprecated"

    @property
    def thinking_modes(self) -> tuple[str, ...]:
        """The run-level thinking modes this model accepts: adaptive, and its lowest setting."""
        modes = []
        if "adaptive" in self.thinking_types:
            modes.append("adaptive")
        lowest = lowest_thinking(self)
        if lowest is not None and lowest not in modes:
            modes.append(lowest)
        return tuple(modes)

    @classmethod
    def from_model_info(cls, info: anthropic.types.ModelInfo) -> ModelProfile:
        capabilities = info.capabilities
        thinking_types: tuple[str, ...] = ()
        effort_levels: tuple[str, ...] = ()
        strategies: tuple[str, ...] = ()
        image_input = structured_outputs = False
        if capabilities is not None:
            types = capabilities.thinking.types
            thinking_types = tuple(
                name for name in ("adaptive", "between_tools", "disabled", "enabled") if getattr(types, name).supported
            )
            effort = capabilities.effort
            if effort.supported:
                effort_levels = tuple(
                    level
                    for level in EFFORT_LEVELS
                    if getattr(effort, level) is not None and getattr(effort, level).supported
                )
            context = capabilities.context_management
            if context.supported:
                strategies = tuple(
                    name
                    for name in ("clear_tool_uses_20250919", "clear_thinking_20251015", "compact_20260112")
                    if getattr(context, name) is not None and getattr(context, name).supported
                )
            image_input = capabilities.image_input.supported
            structured_outputs = capabilities.structured_outputs.supported
        extra = info.model_extra or {}
        return cls(
            id=info.id,
            display_name=info.display_name,
            max_input_tokens=info.max_input_tokens,
            max_tokens=info.max_tokens,
            lifecycle=info.lifecycle,
            retires_at=info.retires_at,
            image_input=image_input,
            structured_outputs=structured_outputs,
            thinking_types=thinking_types,
            effort_levels=effort_levels,
            default_effort=extra.get("default_effort") if isinstance(extra.get("default_effort"), str) else None,
            context_management=strategies,
        )


def lowest_thinking(profile: ModelProfile) -> str | None:
    """The least thinking the model accepts ("disabled", else "between_tools", else "adaptive"), or None."""
    return next((kind for kind in THINKING_LADDER if kind in profile.thinking_types), None)


def thinking_config(profile: ModelProfile, mode: str = "") -> dict[str, Any] | None:
    """The `thinking` parameter to send for a run's thinking mode, or None to send none.

    "" means adaptive where the model supports it, else its lowest setting; "adaptive" and the lowest setting
    are sent as asked (launch has checked the model accepts them). Adaptive thinking asks for `display: updates`,
    so the text the model writes between tool calls comes back; `between_tools` returns it without asking.
    """
    kind = mode or ("adaptive" if "adaptive" in profile.thinking_types else lowest_thinking(profile))
    if kind is None:
        return None
    if kind not in profile.thinking_types:
        raise ValueError(f"{profile.id} does not accept thinking type {kind!r}")
    if kind == "adaptive":
        return {"type": "adaptive", "display": PROGRESS_DISPLAY}
    if kind == "disabled" and not mode:
        return None  # off is the model's own default where it can be off: nothing to send
    return {"type": kind}


# --- the per-process cache ----------------------------------------------------------------------------------------

_lock = threading.Lock()
_profiles: dict[tuple[str, str], tuple[float, ModelProfile]] = {}
_lineups: dict[str, tuple[float, list[ModelProfile]]] = {}


def _ttl() -> float:
    return float(getattr(settings, "MODEL_PROFILE_TTL_SECONDS", 600))


def _endpoint() -> str:
    # The client's own base URL (settings, else the SDK's environment variable, else the API's): profiles of one
    # endpoint are not another's.
    return str(client().base_url)


def _lookup_client() -> anthropic.Anthropic:
    return client().with_options(max_retries=LOOKUP_MAX_RETRIES, timeout=LOOKUP_TIMEOUT_SECONDS)


def _unavailable(error: anthropic.APIError) -> ProfilesUnavailable:
    if isinstance(error, anthropic.APIStatusError):
        reason = f"it answered HTTP {error.status_code}"
    elif isinstance(error, anthropic.APITimeoutError):
        reason = f"it did not answer within {LOOKUP_TIMEOUT_SECONDS:.0f}s"
    else:
        reason = "it could not be reached"
    return ProfilesUnavailable(f"The Models API could not be asked about models: {reason}. Try again shortly.")


def profile(model: str) -> ModelProfile:
    """The model's profile from `models.retrieve`, cached for MODEL_PROFILE_TTL_SECONDS.

    Raises UnknownModel for an id the API does not know, ProfilesUnavailable when it cannot be asked.
    """
    key = (_endpoint(), model)
    now = time.monotonic()
    with _lock:
        cached = _profiles.get(key)
    if cached is not None and now - cached[0] < _ttl():
        return cached[1]
    try:
        info = _lookup_client().models.retrieve(model)
    except anthropic.NotFoundError:
        raise UnknownModel(model) from None
    except anthropic.APIError as error:
        raise _unavailable(error) from error
    found = ModelProfile.from_model_info(info)
    with _lock:
        _profiles[key] = (now, found)
    return found


def active_models() -> list[ModelProfile]:
    """The active lineup from `models.list`, in the API's order (newest first), cached like profiles."""
    key = _endpoint()
    now = time.monotonic()
    with _lock:
        cached = _lineups.get(key)
    if cached is not None and now - cached[0] < _ttl():
        return [found for found in cached[1] if found.lifecycle == "active"]
    try:
        every = [ModelProfile.from_model_info(info) for info in _lookup_client().models.list(limit=100)]
    except anthropic.APIError as error:
        raise _unavailable(error) from error
    with _lock:
        _lineups[key] = (now, every)
        for found in every:
            _profiles[(key, found.id)] = (now, found)
    return [found for found in every if found.lifecycle == "active"]


def forget_profiles() -> None:
    """Empty the cache (tests, or an operator who knows the lineup changed)."""
    with _lock:
        _profiles.clear()
        _lineups.clear()


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
    """The model's profile (ModelProfile) as the Models API describes it, or None when it cannot
    be learnt (the request itself then says what is wrong with the model)."""
    try:
        return profile(model)
    except (UnknownModel, ProfilesUnavailable) as error:
        log.warning("no profile for model %s: %s", model, error)
        return None


def thinking_param(profile: ModelProfile | None, mode: str) -> dict[str, Any] | None:
    """The request's thinking parameter for the run's thinking mode ("" = the model's default), or None to omit it."""
    return None if profile is None else thinking_config(profile, mode)
