"""Model profiles come from the Models API (the stub's catalogue here), are cached per process, and pick thinking."""

import socket

import pytest
from django.test import override_settings

from agent_platform import llm
from agent_platform.llm import ProfilesUnavailable, UnknownModel, thinking_config


@pytest.fixture(autouse=True)
def fresh_profiles(messages_stub):
    llm.forget_profiles()
    messages_stub.server.model_lookups.clear()
    yield messages_stub
    llm.forget_profiles()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_profile_is_read_from_the_models_api():
    sonnet = llm.profile("claude-sonnet-5-5")

    assert sonnet.id == "claude-sonnet-5-5"
    assert sonnet.display_name == "Claude Sonnet 5.5"
    assert (sonnet.max_input_tokens, sonnet.max_tokens) == (1_000_000, 128_000)
    assert sonnet.lifecycle == "active" and sonnet.retires_at is None
    assert sonnet.image_input and sonnet.structured_outputs
    assert sonnet.thinking_types == ("adaptive", "between_tools")
    assert sonnet.effort_levels == ("low", "medium", "high", "xhigh", "max")
    assert sonnet.context_management == ("clear_tool_uses_20250919", "clear_thinking_20251015", "compact_20260112")
    assert sonnet.default_effort is None  # the Models API does not report one


def test_lifecycle_and_retirement_come_from_the_api():
    retiring = llm.profile("claude-sonnet-4-5")
    retired = llm.profile("claude-3-opus-20240229")

    assert retiring.deprecated and retiring.retires_at.date().isoformat() == "2026-11-30"
    assert retired.retired and not retired.deprecated


def test_a_profile_is_cached_until_its_ttl_runs_out(fresh_profiles):
    llm.profile("claude-opus-5-5")
    llm.profile("claude-opus-5-5")
    assert fresh_profiles.server.model_lookups == ["/v1/models/claude-opus-5-5"]

    with override_settings(MODEL_PROFILE_TTL_SECONDS=0):
        llm.profile("claude-opus-5-5")
    assert len(fresh_profiles.server.model_lookups) == 2


def test_an_unknown_model_raises_unknown_model():
    with pytest.raises(UnknownModel):
        llm.profile("claude-nonexistent-9")


def test_an_unreachable_models_api_raises_a_clear_error():
    unreachable = override_settings(ANTHROPIC_BASE_URL=f"http://127.0.0.1:{closed_port()}")
    with unreachable, pytest.raises(ProfilesUnavailable, match="could not be reached"):
        llm.profile("claude-sonnet-5-5")


def test_the_active_lineup_leaves_out_deprecated_and_retired_models_and_fills_the_cache(fresh_profiles):
    ids = [model.id for model in llm.active_models()]
    llm.profile("claude-fable-5-1")

    assert {"claude-fable-5-1", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"} <= set(ids)
    assert "claude-sonnet-4-5" not in ids and "claude-3-opus-20240229" not in ids
    assert fresh_profiles.server.model_lookups == ["/v1/models"]


def test_default_thinking_is_adaptive_with_the_progress_text_shown():
    assert thinking_config(llm.profile("claude-sonnet-5-5")) == {"type": "adaptive", "display": "updates"}


def test_the_lowest_thinking_is_what_each_model_accepts():
    sonnet = llm.profile("claude-sonnet-5-5")
    opus = llm.profile("claude-opus-5-5")
    haiku = llm.profile("claude-haiku-5-5")

    assert sonnet.thinking_modes == ("adaptive", "between_tools")
    assert opus.thinking_modes == ("adaptive",)  # thinking cannot be turned down on Opus 5.5
    assert haiku.thinking_modes == ("adaptive", "disabled")
    assert thinking_config(sonnet, "between_tools") == {"type": "between_tools"}
    assert thinking_config(haiku, "disabled") == {"type": "disabled"}
    with pytest.raises(ValueError):
        thinking_config(sonnet, "disabled")


def test_a_model_without_adaptive_thinking_sends_no_thinking_by_default():
    assert thinking_config(llm.profile("claude-haiku-4-5")) is None
