"""Long-run token economy: input tokens per request, cache hit ratio and cost of a 60-turn run over 20-50K-character
pages, without and with context management (runtime.context) and extraction (runtime.extraction).

The run is replayed request by request as the runtime builds it: the same system prompt and tools, the same cache
breakpoints (runtime.loop.place_breakpoints), the guard's trimmed messages, and the Messages stub's prompt-cache
accounting (scripted_api.wire.PromptCache: about four characters a token, cache reads of the longest cached
prefix). Costs use the prices migration 0006 seeds (Sonnet 5.5 for the agent, Haiku 5.5 with its prompt-length tier
for extraction), in exact Decimal. No browser and no database: the pages are seeded text of 20,000 to 50,000
characters, the agent reads one per turn.

    .venv/bin/python bench/long_run_tokens.py                 # tables, plus docs/img/long-run-tokens.svg
    .venv/bin/python bench/long_run_tokens.py --turns 60 --svg /tmp/curve.svg --json /tmp/numbers.json
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _common import REPO, header, setup_django, table

if TYPE_CHECKING:
    from agent_platform.models import Price

# The published prices by (model, min_prompt_tokens), unsaved.
PriceRows = dict[tuple[str, int], "Price"]

AGENT_MODEL = "claude-sonnet-5-5"
EXTRACTION_MODEL = "claude-haiku-5-5"
AT = datetime(2026, 11, 30, tzinfo=UTC)
AGENT_OUTPUT_TOKENS = 150  # a tool call with a line of reasoning
EXTRACTION_OUTPUT_TOKENS = 120
WORDS = [
    "mug",
    "price",
    "stock",
    "ceramic",
    "delivery",
    "Lyon",
    "store",
    "model",
    "colour",
    "blue",
    "red",
    "enamel",
    "cup",
    "flask",
    "tumbler",
    "order",
    "review",
    "rating",
    "size",
    "litre",
    "handle",
    "glaze",
    "warranty",
    "return",
    "shipping",
    "days",
    "available",
    "colour",
    "pattern",
    "set",
    "pack",
    "gift",
]


@dataclass
class Scenario:
    name: str
    guard: bool
    extraction: bool
    prompts: list[int] = field(default_factory=list)  # input + cache read + cache write, per agent request
    read: list[int] = field(default_factory=list)
    cost: Decimal = Decimal(0)
    extraction_cost: Decimal = Decimal(0)
    extraction_requests: int = 0
    cuts: int = 0


def page_texts(turns: int, seed: int = 13) -> list[str]:
    rng = random.Random(seed)
    pages = []
    for number in range(turns):
        target = rng.randint(20_000, 50_000)
        words: list[str] = []
        length = 0
        while length < target:
            word = rng.choice(WORDS)
            words.append(word)
            length += len(word) + 1
        pages.append(f"Catalogue page {number}\n" + " ".join(words)[:target])
    return pages


def prices() -> PriceRows:
    """The migration's rows as unsaved Price objects, by (model, min_prompt_tokens), latest valid_from winning."""
    from agent_platform.models import Price

    seed = importlib.import_module("agent_platform.migrations.0006_prices_2026_11")
    rows: PriceRows = {}
    for model, speed, tier, day, input_, output, write_5m, write_1h, read in sorted(seed.PUBLISHED, key=lambda r: r[3]):
        if speed == "standard":
            rows[(model, tier)] = Price(
                model=model,
                speed=speed,
                min_prompt_tokens=tier,
                input_per_mtok=Decimal(input_),
                output_per_mtok=Decimal(output),
                cache_write_5m_per_mtok=Decimal(write_5m),
                cache_write_1h_per_mtok=Decimal(write_1h),
                cache_read_per_mtok=Decimal(read),
                valid_from=seed.valid_from(day),
            )
    return rows


def price_for(rows: PriceRows, model: str, prompt: int) -> Price:
    tiers = sorted((tier for name, tier in rows if name == model), reverse=True)
    return rows[(model, next(tier for tier in tiers if tier <= prompt))]


def place_breakpoints(messages: list[dict[str, Any]]) -> None:
    """As the loop does: the last two user messages carry the conversation's cache breakpoints."""
    marked = 0
    for message in reversed(messages):
        if message["role"] != "user" or not message["content"]:
            continue
        last = message["content"][-1]
        if marked < 2:
            last["cache_control"] = {"type": "ephemeral"}
            marked += 1
        else:
            last.pop("cache_control", None)


def replay(scenario: Scenario, pages: list[str], rows: PriceRows) -> Scenario:
    from agent_platform.billing import cost_of
    from agent_platform.lib.request_size import size_of
    from runtime import context, extraction, prompts
    from scripted_api.wire import PromptCache

    cache = PromptCache()
    tools = [{"type": "browser_toolset_20260801"}, prompts.done_tool(None), extraction.extract_tool()]
    system = [{"type": "text", "text": prompts.system_prompt(False), "cache_control": {"type": "ephemeral"}}]
    task = "Find the cheapest mug across the shop's catalogue pages and report its name and price."
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": task}]}]
    profile = context.DefaultProfile(max_input_tokens=1_000_000, context_management=(context.COMPACT,))
    overhead = size_of({"system": system, "tools": tools})
    state = context.ContextState()
    for turn in range(len(pages) + 1):
        place_breakpoints(messages)
        sent = messages
        if scenario.guard:
            prepared = context.prepare(messages, profile, state, overhead=overhead)
            state, sent = prepared.state, prepared.messages
            scenario.cuts += bool(prepared.dropped)
        request = {"model": AGENT_MODEL, "system": system, "tools": tools, "messages": copy.deepcopy(sent)}
        usage = cache.input_usage(request)
        prompt = usage["input_tokens"] + usage["cache_read_input_tokens"] + usage["cache_creation_input_tokens"]
        scenario.prompts.append(prompt)
        scenario.read.append(usage["cache_read_input_tokens"])
        scenario.cost += cost_of(
            price_for(rows, AGENT_MODEL, prompt),
            input_tokens=usage["input_tokens"],
            output_tokens=AGENT_OUTPUT_TOKENS,
            cache_read_input_tokens=usage["cache_read_input_tokens"],
            cache_creation_input_tokens=usage["cache_creation_input_tokens"],
        )
        if turn == len(pages):
            break  # the verdict
        page = pages[turn]
        use_id = f"toolu_{turn:03d}"
        if scenario.extraction:
            name, result = "extract", f"Item {turn}-7, a blue ceramic mug, is the cheapest on this page at 3.10 EUR."
            params = extraction.request_params(EXTRACTION_MODEL, "Which mug is the cheapest?", page, None, None)
            tokens = size_of(params["messages"]).tokens + size_of(params["system"]).tokens
            scenario.extraction_cost += cost_of(
                price_for(rows, EXTRACTION_MODEL, tokens),
                input_tokens=tokens,
                output_tokens=EXTRACTION_OUTPUT_TOKENS,
                cache_read_input_tokens=0,
                cache_creation_input_tokens=0,
            )
            scenario.extraction_requests += 1
        else:
            name, result = "get_page_text", page
        call = {"type": "tool_use", "id": use_id, "name": name, "input": {}}
        if name != "extract":
            call["toolset_name"] = "browser"
        messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Turn {turn}."}, call]})
        answer = {"type": "tool_result", "tool_use_id": use_id, "content": [{"type": "text", "text": result}]}
        if name != "extract":
            answer["toolset_name"] = "browser"
        messages.append({"role": "user", "content": [answer]})
    return scenario


def hit_ratio(scenario: Scenario) -> float:
    later_prompts, later_reads = scenario.prompts[2:], scenario.read[2:]
    return sum(later_reads) / sum(later_prompts) if sum(later_prompts) else float("nan")


def svg_curve(scenarios: list[Scenario], path: Path, turns: int) -> None:
    """Tokens per request against turn number, one polyline per scenario, as a self-contained SVG."""
    width, height, left, bottom, top, right = 760, 400, 70, 50, 30, 190
    peak = max(max(s.prompts) for s in scenarios)
    scale_max = ((peak // 100_000) + 1) * 100_000
    colours = ["#b91c1c", "#1d4ed8", "#15803d"]

    def x(turn: int) -> float:
        return left + (width - left - right) * turn / max(turns, 1)

    def y(tokens: int) -> float:
        return top + (height - top - bottom) * (1 - tokens / scale_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="18" font-size="14">Input tokens per agent request, {turns}-turn run over 20-50K-character '
        "pages</text>",
    ]
    for tick in range(0, scale_max + 1, 100_000):
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" stroke="#e5e7eb"/>')
        parts.append(f'<text x="{left - 8}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick // 1000}K</text>')
    for tick in range(0, turns + 1, 10):
        parts.append(f'<text x="{x(tick):.1f}" y="{height - bottom + 18}" text-anchor="middle">{tick}</text>')
    parts.append(f'<text x="{(left + width - right) / 2:.0f}" y="{height - 12}" text-anchor="middle">turn</text>')
    parts.append(
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}" stroke="#111"/>'
        f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" stroke="#111"/>'
    )
    for index, scenario in enumerate(scenarios):
        points = " ".join(f"{x(turn):.1f},{y(tokens):.1f}" for turn, tokens in enumerate(scenario.prompts))
        colour = colours[index % len(colours)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        legend_y = top + 20 + 22 * index
        parts.append(
            f'<line x1="{width - right + 12}" x2="{width - right + 36}" y1="{legend_y}" y2="{legend_y}" '
            f'stroke="{colour}" stroke-width="3"/>'
            f'<text x="{width - right + 42}" y="{legend_y + 4}">{scenario.name}</text>'
        )
    parts.append("</svg>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument("--svg", type=Path, default=REPO / "docs" / "img" / "long-run-tokens.svg")
    parser.add_argument("--json", type=Path, help="also write the numbers here as JSON")
    args = parser.parse_args()
    setup_django()
    print(header("Long-run token economy"))
    pages = page_texts(args.turns)
    rows = prices()
    scenarios = [
        replay(Scenario("without context management", guard=False, extraction=False), pages, rows),
        replay(Scenario("context management", guard=True, extraction=False), pages, rows),
        replay(Scenario("context mgmt + extraction", guard=True, extraction=True), pages, rows),
    ]
    print(
        f"{args.turns} turns, pages of {min(map(len, pages)):,} to {max(map(len, pages)):,} characters "
        f"({sum(map(len, pages)):,} in all); agent {AGENT_MODEL}, extraction {EXTRACTION_MODEL}\n"
    )
    headers = [
        "scenario",
        "agent requests",
        "peak prompt tok",
        "mean prompt tok",
        "last prompt tok",
        "guard steps",
        "cache hit (req 3+)",
        "agent $",
        "extraction req",
        "extraction $",
        "total $",
    ]
    result_rows = []
    for s in scenarios:
        total = s.cost + s.extraction_cost
        result_rows.append(
            [
                s.name,
                len(s.prompts),
                max(s.prompts),
                round(sum(s.prompts) / len(s.prompts)),
                s.prompts[-1],
                s.cuts,
                f"{hit_ratio(s):.1%}",
                f"{s.cost:.4f}",
                s.extraction_requests,
                f"{s.extraction_cost:.4f}",
                f"{total:.4f}",
            ]
        )
    print(table(headers, result_rows))
    print("\nPrompt tokens per request, every 10th turn:\n")
    print(
        table(
            ["turn", *[s.name for s in scenarios]],
            [[turn, *[s.prompts[turn] for s in scenarios]] for turn in range(0, args.turns + 1, 10)],
        )
    )
    svg_curve(scenarios, args.svg, args.turns)
    print(f"\ncurve written to {args.svg.relative_to(REPO) if args.svg.is_relative_to(REPO) else args.svg}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    s.name: {
                        "prompts": s.prompts,
                        "read": s.read,
                        "cost": str(s.cost),
                        "extraction_cost": str(s.extraction_cost),
                    }
                    for s in scenarios
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
