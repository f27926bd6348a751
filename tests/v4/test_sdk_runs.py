"""The official browser-use-sdk v4 client, unchanged but for its base URL, against Daphne and a real worker: the
documented script, a session's runs and budget, cancel, and the same run through /api/v1."""

import re
import threading
from decimal import Decimal

import pytest
from browser_use_sdk.v4 import BrowserUse

from runs.models import Run
from tests.support import factories, live
from tests.support.clients import ApiClient
from tests.support.judging import judgment_reply
from tests.support.paths import REPO
from tests.support.replies import browser, done

asgi_server = live.asgi_server
prices = factories.prices

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("celery_worker", "transactional_db"),
]

DOC = REPO / "docs" / "browser-use-compat.md"
DATA = {"items": [{"name": "A Light in the Attic", "price": 51.77}, {"name": "Tipping the Velvet", "price": 53.74}]}


def sdk(asgi_server: str, key: str) -> BrowserUse:
    return BrowserUse(api_key=key, base_url=f"{asgi_server}/api/v4")


def documented_script() -> str:
    """The doc's script with only its base URL and key changed, as a Browser Use user would change them."""
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    return block


def test_the_documented_script_runs_unchanged_and_its_run_is_the_same_in_v1(asgi_server, acme_key, messages_stub):
    messages_stub.agent(browser("get_page_text"), done(True, "Two books.", data=DATA))
    messages_stub.judge(judgment_reply("pass", "The data lists the books."))
    script = documented_script()
    script = re.sub(r'^BASE_URL = ".*"', f'BASE_URL = "{asgi_server}/api/v4"', script, count=1, flags=re.M)
    script = re.sub(r'^API_KEY = ".*"', f'API_KEY = "{acme_key}"', script, count=1, flags=re.M)
    namespace: dict = {}
    exec(compile(script, str(DOC), "exec"), namespace)  # noqa: S102  (our own documentation's script)

    run, ready, page = namespace["run"], namespace["ready"], namespace["page"]
    assert run.status.value == "completed"
    assert run.output == DATA and run.result == "Two books."
    assert Decimal(run.total_cost_usd) >= 0 and run.total_input_tokens > 0
    types = [event.type for event in page.events]
    assert types[0] == "run.started" and ready.type == "browser.ready"
    assert types.index("browser.ready") < types.index("agent.tool_use") < types.index("run.completed")
    assert ready.id == page.events[types.index("browser.ready") + 1].id, "said under the first agent event's id"
    real = [event.id for event in page.events if event.type != "browser.ready"]
    assert real == list(range(1, len(real) + 1)) and page.next_after == real[-1]

    # The judge reads the run after it ends: wait for its verdict (after the terminal event, which would otherwise end
    # the SDK's wait), then the same run, the same numbers, through /api/v1 by either id.
    client = sdk(asgi_server, acme_key)
    completed = next(event.id for event in page.events if event.type == "run.completed")
    judged = client.runs.wait_for_event(run.id, "run.judged", after=completed, interval=0.1, timeout=60)
    assert judged.data["verdict"] == "pass"
    run = client.runs.get(run.id)
    assert run.judgement["verdict"] == "pass"
    row = Run.objects.get(uuid=run.id)
    v1 = ApiClient(acme_key).get(f"/runs/{row.public_id}").json()
    assert ApiClient(acme_key).get(f"/runs/{run.id}").json()["id"] == row.public_id
    assert v1["status"] == "succeeded" and v1["data"] == DATA and v1["output"] == "Two books."
    assert v1["usage"]["cost_usd"] == run.total_cost_usd
    assert v1["output_schema"] == run.output_schema
    assert v1["judge"] is True and v1["judge_context"] == ["A price is the number shown next to the product's name."]
    assert Decimal(v1["max_cost_usd"]) == Decimal(2) and row.session.max_cost_usd == Decimal(2)
    v1_events = ApiClient(acme_key).get(f"/runs/{row.public_id}/events").json()["events"]
    assert [event["seq"] for event in v1_events][: len(real)] == real


def test_a_sessions_runs_are_listed_and_its_budget_stops_the_next_run(asgi_server, acme_key, messages_stub, prices):
    client = sdk(asgi_server, acme_key)
    messages_stub.agent(done(True, "First."), done(True, "Second."))
    first = client.runs.wait_for_completion(client.runs.create("Say first.", max_cost_usd=1).id, interval=0.2)
    second_created = client.runs.create("Say second.", session_id=first.session_id)
    assert second_created.session_id == first.session_id
    second = client.runs.wait_for_completion(second_created.id, interval=0.2)
    assert (first.result, second.result) == ("First.", "Second.")

    listed = client.runs.list(session_id=first.session_id)
    assert [run.id for run in listed.runs] == [second.id, first.id] and listed.has_more is False
    info = client.sessions.get(first.session_id)
    assert info.latest_run_id == second.id and info.status.value == "completed" and info.task == "Say second."
    assert first.session_id in {session.session_id for session in client.sessions.list().sessions}

    cost = client.sessions.cost(first.session_id)
    spent = Decimal(cost.total_cost_usd)
    assert cost.num_runs == 2 and spent == Decimal(first.total_cost_usd) + Decimal(second.total_cost_usd) > 0
    # The budget is what the session has spent: its next run's first request would cross it, so it is not sent.
    budget = spent.quantize(Decimal("0.0001"))
    capped = client.sessions.update_cost_cap(first.session_id, max_cost_usd=str(budget))
    assert Decimal(capped.max_cost_usd) == budget
    third = client.runs.wait_for_completion(
        client.runs.create("Say third.", session_id=first.session_id).id, interval=0.2
    )
    assert third.status.value == "failed"
    assert third.error.startswith("cost_limit:") and "this session's budget" in third.error
    assert len(messages_stub.requests_for("agent")) == 2, "the third run asked the model nothing"


def test_a_cancel_through_the_sdk_stops_a_running_run(asgi_server, acme_key, site, messages_stub):
    client = sdk(asgi_server, acme_key)
    cancelled = threading.Event()

    def second_turn(request: dict) -> dict:
        assert cancelled.wait(timeout=30), "the test never cancelled"
        return browser("navigate", url=f"{site}/index.html")

    messages_stub.agent(browser("wait", duration=0.1), second_turn)
    messages_stub.set_fallback(browser("wait", duration=0.1))
    created = client.runs.create(f"Open {site}/runtime_shop.html and wait.")
    client.runs.wait_for_event(created.id, "agent.tool_result", interval=0.1, timeout=60)
    summary = client.runs.cancel(created.id)
    cancelled.set()
    assert summary.id == created.id
    run = client.runs.wait_for_completion(created.id, interval=0.2)
    assert run.status.value == "cancelled" and run.error.startswith("cancelled:")
    assert client.runs.events(created.id, after=0).events[-1].type == "run.cancelled"
