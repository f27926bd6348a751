"""Cost caps: what a run and its workspace may still spend, and what the next model request is estimated to cost."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone

from agent_platform.billing import charge
from agent_platform.lib.money import exact_usd, rounded_usd
from agent_platform.lib.request_size import size_of
from agent_platform.models import ModelRequest
from runs.models import Run

# Until a request has told us its output, one is assumed to write this many tokens.
ASSUMED_OUTPUT_TOKENS = 1_000


@dataclass(frozen=True)
class Headroom:
    """Dollars left before the nearest cap, and which cap that is ("run", "session" or "monthly"); None: no cap
    applies."""

    left: Decimal | None
    cap: str = ""
    limit: Decimal | None = None
    spent: Decimal = Decimal(0)

    def allows(self, cost: Decimal) -> bool:
        return self.left is None or cost <= self.left

    def describe(self) -> str:
        limit = exact_usd(self.limit) if self.limit is not None else "?"
        if self.cap == "monthly":
            return f"the workspace's monthly cost cap of ${limit} ({rounded_usd(self.spent)} spent this month)"
        if self.cap == "session":
            return f"this session's budget of ${limit} ({rounded_usd(self.spent)} spent by its runs)"
        return f"this run's cost cap of ${limit} ({rounded_usd(self.spent)} spent)"


# The run's columns (and its session's and workspace's) that say what it has spent and may spend: one read.
CAP_FIELDS = ("cost_usd", "max_cost_usd", "session__max_cost_usd", "workspace__monthly_cost_cap_usd")


@dataclass(frozen=True)
class Caps:
    """What a run has spent, and its own cap, its session's budget and its workspace's monthly cap, as last read."""

    spent: Decimal
    cap: Decimal | None
    budget: Decimal | None
    monthly: Decimal | None


def caps_of(run: Run) -> Caps:
    return Caps(*Run.objects.filter(pk=run.pk).values_list(*CAP_FIELDS).get())


def headroom(run: Run, now: datetime | None = None, caps: Caps | None = None) -> Headroom:
    """What `run` may still spend: the least of its own cap's rest, its session's budget's rest (what the session's
    runs together may cost) and the workspace's monthly cap's rest, read from the database (the run's totals are
    updated as each request is recorded), or from `caps` when the caller has just read them. No cap applies to a
    process whose model is the scripted demo model, and its requests never count toward the workspace's month."""
    if settings.SCRIPTED_MODEL:
        return Headroom(None)  # the scripted demo model bills nothing, so no cap can be crossed
    now = now or timezone.now()
    read = caps if caps is not None else caps_of(run)
    spent, cap, budget, monthly = read.spent, read.cap, read.budget, read.monthly
    options: list[Headroom] = []
    if cap is not None:
        options.append(Headroom(cap - spent, "run", cap, spent))
    if budget is not None:
        session_spent = Run.objects.filter(session_id=run.session_id).aggregate(total=Sum("cost_usd"))["total"]
        session_spent = session_spent or Decimal(0)
        options.append(Headroom(budget - session_spent, "session", budget, session_spent))
    if monthly is not None:
        # The calendar month in UTC, as billing reports it.
        start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        month_spent = ModelRequest.objects.real().filter(
            workspace_id=run.workspace_id, created_at__gte=start
        ).aggregate(total=Sum("cost_usd"))["total"] or Decimal(0)
        options.append(Headroom(monthly - month_spent, "monthly", monthly, month_spent))
    if not options:
        return Headroom(None)
    return min(options, key=lambda option: option.left if option.left is not None else Decimal("Infinity"))


@dataclass(frozen=True)
class LastRequest:
    """What the previous agent request reported: the prompt it sent (input + cache read + cache write) and its
    output, and how many tokens our own estimate gave that prompt."""

    prompt_tokens: int
    output_tokens: int
    estimated_tokens: int


def estimate(
    model: str,
    *,
    estimated_tokens: int,
    last: LastRequest | None,
    cache_kept: bool,
    speed: str = "standard",
    at: datetime | None = None,
) -> Decimal:
    """The next request's cost at the price in force: the last request's prompt grown by what was added since, its
    prefix read from the cache (unless the context was just cut, which rewrites it), the rest written to the cache,
    and as much output as last time."""
    at = at or timezone.now()
    if last is None:
        prompt, cached, output = estimated_tokens, 0, ASSUMED_OUTPUT_TOKENS
    else:
        prompt = max(last.prompt_tokens + estimated_tokens - last.estimated_tokens, 1)
        cached = min(last.prompt_tokens, prompt) if cache_kept else 0
        output = max(last.output_tokens, 1)
    billed = charge(
        model,
        speed,
        at,
        input_tokens=0,
        output_tokens=output,
        cache_read_input_tokens=cached,
        cache_creation_input_tokens=prompt - cached,
    )
    return billed.cost_usd


class CostCapReached(Exception):
    """A request of the run was not sent: its estimate would cross the run's or the workspace's cost cap. The message
    says which request, about how much, and which cap."""


def request_estimate(params: dict[str, Any]) -> Decimal:
    """A stand-alone request's cost (the judge's, the grader's): its prompt sized as the agent's first request is
    (system, messages, tools and output schema), with as much output as `estimate` assumes of a first request."""
    prompt = {name: params[name] for name in ("system", "messages", "tools", "output_config") if name in params}
    return estimate(params["model"], estimated_tokens=size_of(prompt).tokens, last=None, cache_kept=False)


def ensure_within_cap(run: Run, params: dict[str, Any], what: str) -> None:
    """Before one of the run's requests that is not an agent turn: CostCapReached when its estimate would cross the
    nearer cap, so every request of the run, not only the agent's, stays under it."""
    room = headroom(run)
    if room.left is None:
        return
    cost = request_estimate(params)
    if not room.allows(cost):
        raise CostCapReached(f"{what} (about {rounded_usd(cost)}) would cross {room.describe()}; it was not sent.")
