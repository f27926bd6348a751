"""Recording a Messages API call: its ModelRequest row, the run's totals, and the agent.usage event."""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agent_platform.billing import charge
from agent_platform.models import ModelRequest

from .events import emit
from .models import Run


def _tokens(usage, name: str) -> int:
    value = getattr(usage, name, None) if not isinstance(usage, dict) else usage.get(name)
    return int(value or 0)


def record_model_request(run: Run, *, source: str, model: str, usage) -> ModelRequest:
    """Store one model request of `run` (usage as the SDK returned it), add it to the run's totals and emit it."""
    now = timezone.now()
    speed = (usage.get("speed") if isinstance(usage, dict) else getattr(usage, "speed", None)) or "standard"
    tokens = {
        "input_tokens": _tokens(usage, "input_tokens"),
        "output_tokens": _tokens(usage, "output_tokens"),
        "cache_read_input_tokens": _tokens(usage, "cache_read_input_tokens"),
        "cache_creation_input_tokens": _tokens(usage, "cache_creation_input_tokens"),
    }
    cache_creation = usage.get("cache_creation") if isinstance(usage, dict) else getattr(usage, "cache_creation", None)
    one_hour = _tokens(cache_creation, "ephemeral_1h_input_tokens") if cache_creation else 0
    billed = charge(model, speed, now, one_hour_cache_write=one_hour, **tokens)
    price, cost = billed.price, billed.cost_usd
    with transaction.atomic():
        request = ModelRequest.objects.create(
            workspace_id=run.workspace_id,
            run=run,
            source=source,
            model=model,
            speed=speed,
            cost_usd=cost,
            price=price,
            unpriced=price is None,
            created_at=now,
            **tokens,
        )
        Run.objects.filter(pk=run.pk).update(
            usage_requests=F("usage_requests") + 1,
            usage_input=F("usage_input") + tokens["input_tokens"],
            usage_output=F("usage_output") + tokens["output_tokens"],
            usage_cache_read=F("usage_cache_read") + tokens["cache_read_input_tokens"],
            usage_cache_write=F("usage_cache_write") + tokens["cache_creation_input_tokens"],
            cost_usd=F("cost_usd") + cost,
        )
        emit(
            run,
            "agent.usage",
            {
                "source": source,
                "model": model,
                "speed": speed,
                **tokens,
                "cost_usd": str(cost),
                "unpriced": price is None,
            },
        )
    return request
