"""The README's API walk-through for real: launch with a schema over HTTP, follow the events, read data and judgment."""

import pytest

from runs.presets import ITEMS_SCHEMA as SCHEMA
from tests.support.judging import judgment_reply
from tests.support.launching import wait_for
from tests.support.replies import browser, done

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("celery_worker", "transactional_db")]

DATA = {"items": [{"name": "Kettle", "price": 24.9}, {"name": "Toaster", "price": 39.0}]}


def test_launch_follow_events_and_read_data_and_judgment(api, site, messages_stub):
    messages_stub.agent(browser("get_page_text"), done(True, "Two products.", data=DATA))
    messages_stub.judge(judgment_reply("pass", "The data lists the products shown on the page."))

    launched = api.post(
        "/runs",
        {
            "task": "List the products with their prices.",
            "start_url": f"{site}/runtime_shop.html",
            "output_schema": SCHEMA,
            "judge": True,
            "judge_context": ["Prices are in euros."],
        },
        headers={"Idempotency-Key": "e2e-1"},
    )
    assert launched.status_code == 201, launched.content
    run_id = launched.json()["id"]

    # Follow the events as a client would: each request asks for those after the last seq it has seen.
    seen: list[dict] = []

    def judged() -> bool:
        page = api.get(f"/runs/{run_id}/events?after={seen[-1]['seq'] if seen else 0}&limit=2").json()
        seen.extend(page["events"])
        return any(event["type"] == "run.judged" for event in seen)

    wait_for(judged, timeout=90, interval=0.2, message="run.judged through the events API")
    seqs = [event["seq"] for event in seen]
    assert seqs == list(range(1, len(seqs) + 1)), "every event once, in order"
    types = [event["type"] for event in seen]
    assert types[0] == "run.started" and "run.finished" in types

    run = api.get(f"/runs/{run_id}").json()
    assert run["status"] == "succeeded" and run["success"] is True
    assert run["output"] == "Two products."
    assert run["data"] == DATA
    assert run["output_schema"] == SCHEMA
    assert run["judgment"]["verdict"] == "pass"
    assert run["usage"]["requests"] == 3, "two agent turns and the judge"
    assert run["finished_at"] is not None

    judgments = api.get(f"/runs/{run_id}/judgments").json()["judgments"]
    assert [j["verdict"] for j in judgments] == ["pass"]
    assert judgments[0]["judge_context"] == ["Prices are in euros."]

    by_source = {group["key"]: group["requests"] for group in api.get("/usage?group_by=source").json()["groups"]}
    assert by_source == {"agent": 2, "judge": 1}
