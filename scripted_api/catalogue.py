"""The model lineup the test stub and the scripted model serve on the Models API, and what they enforce per model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

THINKING_TYPES = ("adaptive", "between_tools", "disabled", "enabled")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
CONTEXT_STRATEGIES = ("clear_tool_uses_20250919", "clear_thinking_20251015", "compact_20260112")
# Sampling parameters and the values the API treats as "not set".
SAMPLING_DEFAULTS = {"temperature": 1.0, "top_p": None, "top_k": None}

ALL_CONTEXT = CONTEXT_STRATEGIES
ADAPTIVE_ONLY = ("adaptive",)
FIVE_FIVE_EFFORTS = ("low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True)
class CatalogueModel:
    """One model as the Models API describes it, plus what the API enforces that no capability reports."""

    id: str
    display_name: str
    created_at: str
    lifecycle: str = "active"
    line: str | None = None
    deprecated_at: str | None = None
    retires_at: str | None = None
    max_input_tokens: int = 1_000_000
    max_tokens: int = 128_000
    image_input: bool = True
    pdf_input: bool = True
    structured_outputs: bool = True
    thinking_types: tuple[str, ...] = ADAPTIVE_ONLY
    effort_levels: tuple[str, ...] = FIVE_FIVE_EFFORTS
    context_management: tuple[str, ...] = ALL_CONTEXT
    # Not in the Models API: known per model from each model's "what's new" page.
    forced_tool_refused: bool = False
    sampling_refused: bool = False
    cache_min_tokens: int = 1024
    default_effort: str | None = None
    # A test-only model answers `GET /v1/models/{id}` but is not in the lineup `GET /v1/models` lists, as the real API
    # lists real models only: so it never reaches the launch form's model picker.
    listed: bool = True
    # Efforts `between_tools` is accepted with (Sonnet 5.5: low, medium, high only).
    between_tools_efforts: tuple[str, ...] = ("low", "medium", "high")

    def model_info(self) -> dict[str, Any]:
        """The JSON body of `GET /v1/models/{id}`, exactly the shape the SDK's `ModelInfo` parses."""

        def support(flag: bool) -> dict[str, bool]:
            return {"supported": flag}

        effort: dict[str, Any] = {level: support(level in self.effort_levels) for level in EFFORT_LEVELS}
        effort["supported"] = bool(self.effort_levels)
        context: dict[str, Any] = {name: support(name in self.context_management) for name in CONTEXT_STRATEGIES}
        context["supported"] = bool(self.context_management)
        thinking_supported = bool({"adaptive", "enabled", "between_tools"} & set(self.thinking_types))
        return {
            "type": "model",
            "id": self.id,
            "display_name": self.display_name,
            "created_at": self.created_at,
            "lifecycle": self.lifecycle,
            "line": self.line,
            "deprecated_at": self.deprecated_at,
            "retires_at": self.retires_at,
            "max_input_tokens": self.max_input_tokens,
            "max_tokens": self.max_tokens,
            "capabilities": {
                "batch": support(True),
                "citations": support(True),
                "code_execution": support(True),
                "context_management": context,
                "effort": effort,
                "image_input": support(self.image_input),
                "pdf_input": support(self.pdf_input),
                "server_tools": {"supported": True, "code_execution": support(True), "web_search": support(True)},
                "structured_outputs": support(self.structured_outputs),
                "thinking": {
                    "supported": thinking_supported,
                    "types": {name: support(name in self.thinking_types) for name in THINKING_TYPES},
                },
            },
        }


class Refusals(TypedDict):
    """What a model generation refuses that no capability reports."""

    forced_tool_refused: bool
    sampling_refused: bool


FIVE_X = Refusals(forced_tool_refused=False, sampling_refused=True)
FIVE_FIVE_STRICT = Refusals(forced_tool_refused=True, sampling_refused=True)

CATALOGUE: tuple[CatalogueModel, ...] = (
    CatalogueModel(
        "claude-fable-5-1", "Claude Fable 5.1", "2026-10-14T00:00:00Z", line="fable",
        default_effort="high", **FIVE_FIVE_STRICT,
    ),
    CatalogueModel(
        "claude-opus-5-5", "Claude Opus 5.5", "2026-09-23T00:00:00Z", line="opus",
        default_effort="medium", **FIVE_FIVE_STRICT,
    ),
    CatalogueModel(
        "claude-sonnet-5-5", "Claude Sonnet 5.5", "2026-09-23T00:00:00Z", line="sonnet",
        thinking_types=("adaptive", "between_tools"), cache_min_tokens=512, default_effort="high",
        **FIVE_FIVE_STRICT,
    ),
    CatalogueModel(
        "claude-haiku-5-5", "Claude Haiku 5.5", "2026-10-01T00:00:00Z", line="haiku",
        thinking_types=("adaptive", "between_tools", "disabled"), effort_levels=("low", "medium", "high"),
        default_effort="medium", **FIVE_X,
    ),
    CatalogueModel(
        "claude-opus-5", "Claude Opus 5", "2026-05-12T00:00:00Z", line="opus",
        thinking_types=("adaptive", "disabled"), default_effort="high", **FIVE_X,
    ),
    CatalogueModel(
        "claude-sonnet-5", "Claude Sonnet 5", "2026-05-12T00:00:00Z", line="sonnet",
        thinking_types=("adaptive", "disabled"), effort_levels=("low", "medium", "high", "max"),
        default_effort="high", **FIVE_X,
    ),
    CatalogueModel(
        "claude-opus-4-6", "Claude Opus 4.6", "2026-02-05T00:00:00Z", line="opus",
        thinking_types=("adaptive", "disabled", "enabled"), effort_levels=("low", "medium", "high", "max"),
        default_effort="high",
    ),
    CatalogueModel(
        "claude-sonnet-4-6", "Claude Sonnet 4.6", "2026-02-17T00:00:00Z", line="sonnet",
        thinking_types=("adaptive", "disabled", "enabled"), effort_levels=("low", "medium", "high"),
        default_effort="high",
    ),
    CatalogueModel(
        "claude-haiku-4-5", "Claude Haiku 4.5", "2025-10-15T00:00:00Z", line="haiku",
        max_input_tokens=200_000, max_tokens=64_000, thinking_types=("disabled", "enabled"), effort_levels=(),
        context_management=("clear_tool_uses_20250919", "clear_thinking_20251015"),
    ),
    CatalogueModel(
        "claude-opus-4-5", "Claude Opus 4.5", "2025-11-24T00:00:00Z", line="opus", lifecycle="deprecated",
        deprecated_at="2026-07-22T00:00:00Z", retires_at="2027-01-22T00:00:00Z",
        max_input_tokens=200_000, max_tokens=64_000, thinking_types=("disabled", "enabled"),
        effort_levels=("low", "medium", "high"),
        context_management=("clear_tool_uses_20250919", "clear_thinking_20251015"),
    ),
    CatalogueModel(
        "claude-sonnet-4-5", "Claude Sonnet 4.5", "2025-09-29T00:00:00Z", line="sonnet", lifecycle="deprecated",
        deprecated_at="2026-05-30T00:00:00Z", retires_at="2026-11-30T00:00:00Z",
        max_input_tokens=200_000, max_tokens=64_000, thinking_types=("disabled", "enabled"), effort_levels=(),
        context_management=("clear_tool_uses_20250919", "clear_thinking_20251015"),
    ),
    CatalogueModel(
        "claude-3-opus-20240229", "Claude Opus 3", "2024-02-29T00:00:00Z", line="opus", lifecycle="retired",
        deprecated_at="2025-06-30T00:00:00Z", retires_at="2026-01-05T00:00:00Z",
        max_input_tokens=200_000, max_tokens=4096, structured_outputs=False, thinking_types=("disabled",),
        effort_levels=(), context_management=(),
    ),
    # Not a real model: Sonnet 5.5's behaviour in a 200K window, so tests can reach the context limit cheaply.
    CatalogueModel(
        "claude-test-200k", "Claude Test 200K", "2026-09-23T00:00:00Z", line="sonnet",
        max_input_tokens=200_000, thinking_types=("adaptive", "between_tools"), cache_min_tokens=512,
        default_effort="high", listed=False, **FIVE_FIVE_STRICT,
    ),
)  # fmt: skip

BY_ID: dict[str, CatalogueModel] = {model.id: model for model in CATALOGUE}


def catalogue_model(model_id: str) -> CatalogueModel | None:
    return BY_ID.get(model_id)


def models_page(*, limit: int = 20, after_id: str | None = None, before_id: str | None = None) -> dict[str, Any]:
    """One page of `GET /v1/models`, newest first, paged by id the way the API pages it."""
    ordered = sorted((model for model in CATALOGUE if model.listed), key=lambda model: model.created_at, reverse=True)
    ids = [model.id for model in ordered]
    start, end = 0, len(ordered)
    if after_id in ids:
        start = ids.index(after_id) + 1
    if before_id in ids:
        end = ids.index(before_id)
        start = max(start, end - limit)
    chosen = ordered[start:end][:limit]
    return {
        "data": [model.model_info() for model in chosen],
        "has_more": start + len(chosen) < end,
        "first_id": chosen[0].id if chosen else None,
        "last_id": chosen[-1].id if chosen else None,
    }
