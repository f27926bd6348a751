"""A run through the MCP server for real: the official client launches it over streamable HTTP against Daphne, a worker
runs it against the Messages stub, wait_for_run reports each turn as progress and returns it finished, and it is the
same run, id and bill through the v1 API."""

import pytest

from runs.presets import ITEMS_SCHEMA as SCHEMA
from scripted_api.wire import text_reply
from tests.support import live
from tests.support.judging import judgment_reply, user_text
from tests.support.launching import wait_for
from tests.support.mcp_client import MODES, data_of, with_client
from tests.support.replies import browser, done

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("celery_worker", "transactional_db")]

asgi_server = live.asgi_server

DATA = {"items": [{"name": "Kettle", "price": 24.9}, {"name": "Toaster", "price": 39.0}]}


@pytest.mark.parametrize("mode", MODES)
def test_launch_wait_with_progress_and_read_the_data(mode, asgi_server, acme_key, api, site, messages_stub):
    messages_stub.agent(browser("get_page_text"), done(True, "Two products.", data=DATA))
    messages_stub.judge(judgment_reply("pass", "The data lists the products shown on the page."))
    progress: list[tuple[float, str | None]] = []

    async def scenario(client):
        launched = await client.call_tool(
            "launch_run",
            {
                "task": "List the products with their prices.",
                "start_url": f"{site}/runtime_shop.html",
                "output_schema": SCHEMA,
                "judge": True,
                "judge_context": ["Prices are in euros."],
                "max_turns": 5,
                "max_cost_usd": 0.5,
            },
        )
        run = data_of(launched)

        async def on_progress(value, total, message):
            progress.append((value, message))

        waited = await client.call_tool("wait_for_run", {"run_id": run["id"]}, progress_callback=on_progress)
        read = await client.call_tool("get_run", {"run_id": run["id"]})
        listed = await client.call_tool("list_runs", {"session_id": run["session_id"]})
        return run, data_of(waited), data_of(read), data_of(listed)

    launched, finished, read, listed = with_client(f"{asgi_server}/mcp", acme_key, scenario, mode=mode)

    # The launch's answer is read after its commit sent the run to the workers: a free worker may have claimed it.
    assert launched["status"] in ("queued", "running") and launched["id"].startswith("run_")
    assert launched["max_turns"] == 5 and launched["max_cost_usd"] == "0.5"
    assert progress == [(1, "Turn 1: browser.get_page_text"), (2, "Turn 2: done")]
    assert finished["status"] == "succeeded" and finished["success"] is True
    assert finished["output"] == "Two products." and finished["data"] == DATA
    assert finished["judgment"]["verdict"] == "pass", "wait_for_run waited for the judge"
    assert finished["usage"]["requests"] == 3 and finished["signals"]["turns"] == 1
    assert read == finished
    assert [run["id"] for run in listed["runs"]] == [launched["id"]] and listed["has_more"] is False
    # One object whichever door: the v1 API answers the same run, byte for byte.
    assert api.get(f"/runs/{launched['id']}").json() == finished


def test_a_prose_turn_is_reported_and_a_finished_run_is_judged_again(asgi_server, acme_key, messages_stub):
    messages_stub.agent(text_reply("Hello there."), done(True, "Said hello."))
    messages_stub.judge(judgment_reply("pass", "First reading."), judgment_reply("fail", "Second reading."))
    url = f"{asgi_server}/mcp"
    progress: list[tuple[float, str | None]] = []

    async def scenario(client):
        async def on_progress(value, total, message):
            progress.append((value, message))

        run = data_of(await client.call_tool("launch_run", {"task": "Say hello.", "judge": True}))
        judged = await client.call_tool("wait_for_run", {"run_id": run["id"]}, progress_callback=on_progress)
        again = await client.call_tool("rejudge_run", {"run_id": run["id"], "judge_context": ["Be strict."]})
        return data_of(judged), data_of(again)

    judged, again = with_client(url, acme_key, scenario, mode="legacy")

    assert progress == [(1, "Turn 1: the agent wrote a message"), (2, "Turn 2: done")]
    assert judged["status"] == "succeeded" and judged["judgment"]["reason"] == "First reading."
    assert again["id"] == judged["id"] and again["judge_context"] == [], "the run's own context is unchanged"

    def second_judgment():
        run = data_of(with_client(url, acme_key, lambda client: client.call_tool("get_run", {"run_id": judged["id"]})))
        return run["judgment"]["reason"] == "Second reading."

    wait_for(second_judgment, timeout=60, interval=0.5, message="the second judgment through get_run")
    assert "Be strict." in user_text(messages_stub.requests_for("judge")[-1]), "the new context reached the judge"
