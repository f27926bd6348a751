"""Long runs within the model's limits and the operator's budget: 150 turns of 40K-character pages and screenshots end
with a verdict on a 200K and a 1M window (the strict stub refuses any request over a limit), extraction and compaction
are billed as their own requests, and a cost cap brings the verdict turn instead of the request that would cross it."""

from decimal import Decimal
from typing import Any

import pytest
from django.db.models import Sum
from django.utils import timezone

from agent_platform.models import ModelRequest
from runs.models import Run
from scripted_api.stub import default_route
from scripted_api.wire import multi_tool_use_reply, text_reply, tool_use_block, tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import factories
from tests.support.factories import make_run
from tests.support.launching import events, finished
from tests.support.workers import WorkerProcess, worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
prices = factories.prices

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("long_run_worker", "transactional_db")]

QUEUE = "long-run-tests"
EXTRACTION_QUEUE = "extraction"
LONG_RUN_TIMEOUT = 900  # on a quiet machine the pair takes about two minutes
TURNS = 150
# A fresh worker starts its Chromium on the first run: on a loaded machine that alone can take ten seconds.
CAP_RUN_TIMEOUT = 180


@pytest.fixture(scope="module")
def long_run_worker(request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory):
    """A worker with a small viewport, so 150 screenshots stay light, on a queue of its own."""
    with django_db_blocker.unblock():
        env = worker_environment(
            {
                "MODEL_MAX_RETRIES": "0",
                "BROWSER_VIEWPORT_WIDTH": "320",
                "BROWSER_VIEWPORT_HEIGHT": "240",
                "RUN_TIME_LIMIT_SECONDS": "600",
                "MEDIA_ROOT": str(tmp_path_factory.mktemp("long-run-media")),
            }
        )
    worker = WorkerProcess(env, tmp_path_factory.mktemp("long-run-worker") / "worker.log", queues=QUEUE).start()
    yield worker
    worker.stop()


def launch(workspace, **fields) -> Run:
    from runs.tasks import execute_run

    run = make_run(workspace, **fields)
    execute_run.apply_async(args=[run.pk], queue=QUEUE)
    return run


def route(request: dict[str, Any]) -> str:
    """Extraction requests carry no tools; the agent's go to a queue per model, so two runs can go at once."""
    if not request.get("tools"):
        return EXTRACTION_QUEUE
    queue = default_route(request)
    return request.get("model", queue) if queue == "agent" else queue


def last_user_text(request: dict[str, Any]) -> str:
    """Every text the last user message holds, tool results included (where the runtime writes its notices)."""
    texts = []
    for block in request["messages"][-1]["content"]:
        if block.get("type") == "text":
            texts.append(block["text"])
        elif block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            texts += [item.get("text", "") for item in block["content"] if item.get("type") == "text"]
    return "\n".join(texts)


class Reader:
    """A scripted agent that reads a new 40K-character catalogue page every turn (navigate, get_page_text and a
    screenshot), asks extract every tenth turn, and calls done as soon as it is told its verdict turn has come."""

    def __init__(self, site: str, *, compaction_at: int | None = None, thinking: bool = True):
        self.site = site
        self.turn = 0
        self.compaction_at = compaction_at
        self.thinking = thinking
        self.sizes: list[int] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        if "verdict turn" in last_user_text(request).lower():
            return tool_use_reply("done", {"success": True, "output": f"Read {self.turn} catalogue pages."})
        self.turn += 1
        thought = f"Turn {self.turn}: on to the next page." if self.thinking else None
        if self.turn % 10 == 0:
            return tool_use_reply("extract", {"query": "Which item on this page is the cheapest?"}, thinking=thought)
        blocks = [
            tool_use_block("navigate", {"url": f"{self.site}/catalogue.html?page={self.turn}"}, toolset_name="browser"),
            tool_use_block("get_page_text", {}, toolset_name="browser"),
            tool_use_block("screenshot", {}, toolset_name="browser"),
        ]
        reply = multi_tool_use_reply(blocks, thinking=thought)
        if self.turn == self.compaction_at:
            # What the API answers when server-side compaction ran before this reply: a compaction block first, and
            # the summarising step's usage in usage.iterations (not in the top-level usage).
            reply["content"].insert(
                0, {"type": "compaction", "content": "Summary: catalogue pages read so far; cheapest is 3.10 EUR."}
            )
            reply["usage"] = {
                "input_tokens": 4_000,
                "output_tokens": 120,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "iterations": [
                    {
                        "type": "compaction",
                        "input_tokens": 180_000,
                        "output_tokens": 3_500,
                        "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0,
                    }
                ],
            }
        return reply


def assert_totals_equal_the_rows(run: Run) -> None:
    rows = ModelRequest.objects.filter(run=run)
    sums = rows.aggregate(
        input=Sum("input_tokens"),
        output=Sum("output_tokens"),
        read=Sum("cache_read_input_tokens"),
        write=Sum("cache_creation_input_tokens"),
        cost=Sum("cost_usd"),
    )
    assert run.usage_requests == rows.count()
    assert (run.usage_input, run.usage_output, run.usage_cache_read, run.usage_cache_write) == (
        sums["input"],
        sums["output"],
        sums["read"],
        sums["write"],
    )
    assert run.cost_usd == sums["cost"]


WINDOWS = {"claude-test-200k": None, "claude-sonnet-5-5": 61}  # model -> the turn the API compacts at, if any


def test_a_150_turn_run_over_40k_pages_with_a_screenshot_every_turn_ends_with_a_verdict_on_200k_and_1m_windows(
    acme, site, messages_stub
):
    # Both runs at once (the worker has four threads), each answered by its own scripted agent.
    readers = {model: Reader(site, compaction_at=turn) for model, turn in WINDOWS.items()}
    messages_stub.route = route
    for model, reader in readers.items():
        messages_stub.set_fallback(reader, queue=model)
    messages_stub.set_fallback(text_reply("Item 7 at 3.10 EUR is the cheapest."), queue=EXTRACTION_QUEUE)
    runs = {
        model: launch(acme, model=model, max_turns=TURNS, start_url=f"{site}/catalogue.html?page=0", max_cost_usd=None)
        for model in WINDOWS
    }
    for model in WINDOWS:
        runs[model] = finished(runs[model], timeout=LONG_RUN_TIMEOUT)

    for model, run in runs.items():
        assert run.status == Run.Status.SUCCEEDED, (model, run.error_code, run.error_message)
        assert run.signals["turns"] == TURNS
        assert (run.signals["verdict_turn"], run.signals["verdict_followed"]) == ("cap", True)
        # Every request went through the strict stub, which refuses any over the window, 100 images or 32 MB (the
        # fixture fails the test on a refusal); and none forced a tool.
        agent_requests = messages_stub.requests_for(model)
        assert len(agent_requests) == TURNS + 1
        assert all((r.get("tool_choice") or {}).get("type") not in ("tool", "any") for r in agent_requests)
        assert all(r.get("context_management") for r in agent_requests), "the model's server-side strategy is asked"
        cleared = events(run, "context.cleared")
        assert cleared, "the client-side guard trimmed what was sent"
        assert all(e.payload["tokens_saved"] > 0 and e.payload["turn"] > 1 for e in cleared)
        # In large steps: a handful of cuts over 151 requests, so the prompt cache holds in between.
        assert len(cleared) <= 30
        rows = ModelRequest.objects.filter(run=run)
        sources = {source: rows.filter(source=source).count() for source in ("agent", "extraction", "compaction")}
        assert sources["agent"] == TURNS + 1
        assert sources["extraction"] == TURNS // 10
        if WINDOWS[model]:
            assert sources["compaction"] == 1
            [compacted] = events(run, "context.compacted")
            assert compacted.payload["tokens_before"] == 180_000 and compacted.payload["turn"] == WINDOWS[model]
        else:
            assert sources["compaction"] == 0
        assert_totals_equal_the_rows(run)
        extractions = [e for e in events(run, "agent.tool_result") if e.payload["name"] == "extract"]
        assert len(extractions) == TURNS // 10 and all(not e.payload["is_error"] for e in extractions)
        assert extractions[0].payload["content"] == "Item 7 at 3.10 EUR is the cheapest."


def cheap_reader(site: str, *, obey: bool = True):
    """An agent that reads a 40K-character page each turn and, told of its verdict turn, calls done (or not)."""
    state = {"turn": 0}

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if "verdict turn" in last_user_text(request).lower() and obey:
            return tool_use_reply("done", {"success": True, "output": "Stopped at the budget."})
        state["turn"] += 1
        return multi_tool_use_reply(
            [
                tool_use_block(
                    "navigate", {"url": f"{site}/catalogue.html?page={state['turn']}"}, toolset_name="browser"
                ),
                tool_use_block("get_page_text", {}, toolset_name="browser"),
            ]
        )

    return reply


@pytest.mark.usefixtures("prices")
def test_a_five_cent_cap_brings_the_verdict_turn_and_never_sends_the_request_that_would_cross_it(
    acme, site, messages_stub
):
    messages_stub.set_fallback(cheap_reader(site))
    run = finished(
        launch(
            acme,
            model="claude-sonnet-5-5",
            max_turns=50,
            max_cost_usd=Decimal("0.05"),
            start_url=f"{site}/catalogue.html",
        ),
        timeout=CAP_RUN_TIMEOUT,
    )

    assert run.status == Run.Status.SUCCEEDED, (run.error_code, run.error_message)
    assert (run.signals["verdict_turn"], run.signals["verdict_followed"]) == ("budget", True)
    assert run.cost_usd <= Decimal("0.05")
    assert run.signals["turns"] < 50
    requests = messages_stub.requests_for("agent")
    verdict_request = requests[-1]
    assert "cost cap of $0.05" in last_user_text(verdict_request)
    assert "verdict turn" in last_user_text(verdict_request)
    # Spend after each request never passed the cap, and the next request, had it been sent, would have.
    running = Decimal(0)
    for row in ModelRequest.objects.filter(run=run).order_by("created_at", "id"):
        running += row.cost_usd
        assert running <= Decimal("0.05")
    assert_totals_equal_the_rows(run)


@pytest.mark.usefixtures("prices")
def test_an_agent_that_ignores_the_budget_verdict_turn_ends_failed_with_cost_limit(acme, site, messages_stub):
    messages_stub.set_fallback(cheap_reader(site, obey=False))
    run = finished(
        launch(
            acme,
            model="claude-sonnet-5-5",
            max_turns=50,
            max_cost_usd=Decimal("0.05"),
            start_url=f"{site}/catalogue.html",
        ),
        timeout=CAP_RUN_TIMEOUT,
    )

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.COST_LIMIT
    assert (run.signals["verdict_turn"], run.signals["verdict_followed"]) == ("budget", False)
    assert run.cost_usd <= Decimal("0.05")
    assert events(run, "agent.tool_result"), "everything written so far is kept"


@pytest.mark.usefixtures("prices")
def test_the_workspace_monthly_cap_stops_a_run_before_its_first_request(acme, site, messages_stub):
    acme.monthly_cost_cap_usd = Decimal("0.03")
    acme.save()
    earlier = make_run(acme)
    ModelRequest.objects.create(
        workspace=acme, run=earlier, source="agent", model="claude-sonnet-5-5", cost_usd=Decimal("0.0299"),
        created_at=timezone.now(),
    )  # fmt: skip
    messages_stub.set_fallback(cheap_reader(site))
    run = finished(
        launch(acme, model="claude-sonnet-5-5", max_turns=5, start_url=f"{site}/catalogue.html"),
        timeout=CAP_RUN_TIMEOUT,
    )

    assert run.status == Run.Status.FAILED
    assert run.error_code == Run.ErrorCode.COST_LIMIT
    assert "monthly cost cap of $0.03" in run.error_message
    assert messages_stub.requests_for("agent") == []
    assert run.usage_requests == 0
