"""The scripted demo model plays the bundled demo tasks step by step from the conversation, and judges and grades them."""

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import anthropic
import pytest
from anthropic.tools.browser import BetaToolsetCallContext

from demo_site.views import PRODUCTS
from runs.presets import ITEMS_SCHEMA
from runtime.browser.host import BrowserHost
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.toolset import PlaywrightBrowserToolset
from scripted_api.demo import (
    DONE_TOOL,
    JUDGE_TOOL,
    UNKNOWN_TASK_OUTPUT,
    ScriptedDemoModel,
    conform,
    parse_controls,
    parse_products,
    scripted_model_server,
)
from tests.support.browsers import CHROMIUM
from tests.support.demo_conversation import CONTACT_SNAPSHOT, MODEL, THANKS_PAGE_TEXT, Conversation
from tests.support.paths import REPO

SHOP_TASK = "List the products on the first page of the demo shop with their prices.\nStart URL: http://127.0.0.1:8123/demo/shop/"
CONTACT_TASK = "Send the demo shop a message through its contact form.\nStart URL: http://127.0.0.1:8123/demo/"

# What Chromium's document.body.innerText gives for the demo shop's first page.
SHOP_PAGE_TEXT = """Northwind Goods
Home Shop Contact
Shop

Showing products 1 to 4 of 12.

Aurora Desk Lamp $49.00

A warm LED lamp with three brightness levels.

Basalt Coffee Mug $14.50

Stoneware, 350 ml, dishwasher safe.

Cedar Notebook $9.99

A5, 120 dotted pages, lies flat when open.

Drift Wool Socks $19.99

Merino blend, sizes 36 to 46.

Page 1
Page 2
Page 3
Next
A demo shop bundled with Pilothouse for agents to practise on. Nothing here is for sale."""


def test_shop_task_navigates_reads_the_page_then_reports_what_the_page_listed():
    conversation = Conversation(SHOP_TASK, ITEMS_SCHEMA)

    navigate = conversation.next_call()
    assert (navigate["name"], navigate["toolset_name"]) == ("navigate", "browser")
    assert navigate["input"] == {"url": "http://127.0.0.1:8123/demo/shop/"}
    conversation.answer(navigate, "Navigated to http://127.0.0.1:8123/demo/shop/ (Shop · Northwind Goods)")

    read = conversation.next_call()
    assert (read["name"], read["toolset_name"], read["input"]) == ("get_page_text", "browser", {})
    conversation.answer(read, [{"type": "text", "text": SHOP_PAGE_TEXT + "\n[notice] 3 of 30 turns used."}])

    done = conversation.next_call()
    assert done["name"] == DONE_TOOL
    assert "toolset_name" not in done
    assert done["input"]["success"] is True
    assert done["input"]["data"] == {
        "items": [
            {"name": "Aurora Desk Lamp", "price": 49.0},
            {"name": "Basalt Coffee Mug", "price": 14.5},
            {"name": "Cedar Notebook", "price": 9.99},
            {"name": "Drift Wool Socks", "price": 19.99},
        ]
    }
    assert "4 products" in done["input"]["output"]
    assert "Cedar Notebook ($9.99)" in done["input"]["output"]


def test_shop_data_comes_from_the_tool_result_not_from_the_script():
    conversation = Conversation(SHOP_TASK, ITEMS_SCHEMA)
    conversation.answer(conversation.next_call(), "Navigated.")
    conversation.answer(conversation.next_call(), "Shop\nMoonlight Teapot\n€ 31,50\nSolar Kite - $12.00\n")

    done = conversation.next_call()

    assert done["input"]["data"] == {
        "items": [{"name": "Moonlight Teapot", "price": 31.5}, {"name": "Solar Kite", "price": 12.0}]
    }


def test_data_is_fitted_to_the_runs_output_schema():
    schema = {
        "type": "object",
        "properties": {
            "products": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "cost": {"type": "string"}, "sku": {"type": "string"}},
                    "required": ["title", "cost", "sku"],
                },
            },
            "count": {"type": "integer"},
        },
        "required": ["products"],
    }
    conversation = Conversation(SHOP_TASK, schema)
    conversation.answer(conversation.next_call(), "Navigated.")
    conversation.answer(conversation.next_call(), SHOP_PAGE_TEXT)

    data = conversation.next_call()["input"]["data"]

    assert data["products"][0] == {"title": "Aurora Desk Lamp", "cost": "49.00", "sku": ""}
    assert len(data["products"]) == 4
    assert "count" not in data


def test_without_an_output_schema_done_carries_no_data():
    conversation = Conversation(SHOP_TASK)
    conversation.answer(conversation.next_call(), "Navigated.")
    conversation.answer(conversation.next_call(), SHOP_PAGE_TEXT)

    done = conversation.next_call()

    assert set(done["input"]) == {"success", "output"}
    assert done["input"]["success"] is True


def test_a_revision_request_is_answered_by_calling_done_again():
    conversation = Conversation(SHOP_TASK, ITEMS_SCHEMA)
    conversation.answer(conversation.next_call(), "Navigated.")
    conversation.answer(conversation.next_call(), SHOP_PAGE_TEXT)
    first = conversation.next_call()
    conversation.answer(first, "Recorded.")
    conversation.messages.append(
        {"role": "user", "content": "Revision requested (iteration 1): your deliverables do not meet the rubric yet."}
    )

    again = conversation.next_call()

    assert again["name"] == DONE_TOOL
    assert again["input"]["output"].startswith("Revised answer: ")
    assert again["input"]["data"] == first["input"]["data"]


def test_start_url_of_the_demo_root_leads_to_the_shop_page():
    conversation = Conversation("List the products of the demo shop.\nStart URL: http://localhost:9000/demo/")

    assert conversation.next_call()["input"] == {"url": "http://localhost:9000/demo/shop/"}


def test_without_a_start_url_the_demo_sites_configured_address_is_used(settings):
    settings.DEMO_BASE_URL = "http://127.0.0.1:8301/"
    conversation = Conversation("List the products on the first page of the demo shop.")

    assert conversation.next_call()["input"] == {"url": "http://127.0.0.1:8301/demo/shop/"}


def test_the_demo_address_given_to_the_model_wins_over_the_setting(settings):
    settings.DEMO_BASE_URL = "http://127.0.0.1:8301/"
    model = ScriptedDemoModel("http://demo.example.com:9000")
    conversation = Conversation("Send the demo shop a message through its contact form.")
    conversation.model = model

    assert conversation.next_call()["input"] == {"url": "http://demo.example.com:9000/demo/contact/"}


def test_contact_task_fills_every_field_by_its_ref_sends_and_confirms():
    conversation = Conversation(CONTACT_TASK)

    navigate = conversation.next_call()
    assert navigate["input"] == {"url": "http://127.0.0.1:8123/demo/contact/"}
    conversation.answer(navigate, "Navigated.")
    read_page = conversation.next_call()
    assert (read_page["name"], read_page["input"]) == ("read_page", {"filter": "interactive"})
    conversation.answer(read_page, CONTACT_SNAPSHOT)

    actions = []
    for _ in range(6):
        call = conversation.next_call()
        actions.append((call["name"], call["input"]["target"]["ref"], call["input"].get("value")))
        conversation.answer(call, "")

    assert actions == [
        ("form_input", "f1e14", "Ada Lovelace"),
        ("form_input", "f1e17", "ada@example.com"),
        ("form_input", "f1e20", "Returns and refunds"),
        ("form_input", "f1e23", actions[3][2]),
        ("form_input", "f1e25", True),
        ("left_click", "f1e26", None),
    ]
    assert "return" in actions[3][2]
    confirm = conversation.next_call()
    assert confirm["name"] == "get_page_text"
    conversation.answer(confirm, THANKS_PAGE_TEXT)
    done = conversation.next_call()
    assert done["name"] == DONE_TOOL
    assert done["input"]["success"] is True
    assert "ada@example.com" in done["input"]["output"]


def test_contact_without_a_confirmation_is_reported_as_failed():
    conversation = Conversation(CONTACT_TASK)
    conversation.answer(conversation.next_call(), "Navigated.")
    conversation.answer(conversation.next_call(), CONTACT_SNAPSHOT)
    for _ in range(6):
        conversation.answer(conversation.next_call(), "")
    conversation.answer(conversation.next_call(), "Contact us\nThis field is required.")

    done = conversation.next_call()

    assert done["input"]["success"] is False


def test_a_page_without_the_form_fields_ends_the_contact_task_as_failed():
    conversation = Conversation(CONTACT_TASK)
    conversation.answer(conversation.next_call(), "Navigated.")
    conversation.answer(conversation.next_call(), '- link "Home" [ref=e3]')

    done = conversation.next_call()

    assert (done["name"], done["input"]["success"]) == (DONE_TOOL, False)


def test_a_failed_browser_step_ends_the_run_with_the_error():
    conversation = Conversation(SHOP_TASK)
    conversation.answer(conversation.next_call(), "net::ERR_CONNECTION_REFUSED", is_error=True)

    done = conversation.next_call()

    assert done["input"]["success"] is False
    assert "ERR_CONNECTION_REFUSED" in done["input"]["output"]


def test_an_unknown_task_is_declined_with_done_failed():
    conversation = Conversation("Book me a flight to Lisbon.\nStart URL: https://example.com/")

    done = conversation.next_call()

    assert done["input"] == {"success": False, "output": UNKNOWN_TASK_OUTPUT}


JUDGMENT_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail", "uncertain"]},
        "reason": {"type": "string"},
        "blocked": {"type": "boolean"},
        "impossible": {"type": "boolean"},
    },
    "required": ["verdict", "reason", "blocked", "impossible"],
    "additionalProperties": False,
}


def judge_request(verdict_lines: str, *, structured: bool = True, context: str = "(none)") -> dict:
    text = (
        f"# Judge context (weigh these before everything else)\n{context}\n\n# Task\nList the products.\n\n"
        f"# The agent's verdict\nStatus: succeeded\n{verdict_lines}\nError code: none\nOutput:\nFour products.\n\n"
        '# Steps the run took\n1. done {"success": false}'
    )
    request = {
        "model": MODEL,
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
    }
    if structured:
        request["output_config"] = {"format": {"type": "json_schema", "schema": JUDGMENT_SCHEMA}}
    else:
        request["tools"] = [{"name": JUDGE_TOOL, "strict": True, "input_schema": JUDGMENT_SCHEMA}]
        request["tool_choice"] = {"type": "auto"}
    return request


def final_text(reply: dict) -> str:
    return next(block["text"] for block in reply["content"] if block["type"] == "text")


@pytest.mark.parametrize(
    ("verdict_line", "verdict"), [("success: true", "pass"), ("success: false", "fail"), ("success: null", "uncertain")]
)
def test_the_judge_follows_the_agents_verdict_in_structured_output(verdict_line: str, verdict: str):
    reply = ScriptedDemoModel()(judge_request(verdict_line))

    assert reply["stop_reason"] == "end_turn"
    judgment = json.loads(final_text(reply))
    assert judgment["verdict"] == verdict
    assert judgment["blocked"] is False
    assert judgment["impossible"] is False
    assert judgment["reason"]


def test_the_judge_calls_its_strict_tool_when_offered_one_under_auto():
    reply = ScriptedDemoModel()(judge_request("success: true", structured=False))

    (call,) = [block for block in reply["content"] if block["type"] == "tool_use"]
    assert call["name"] == JUDGE_TOOL
    assert call["input"]["verdict"] == "pass"


def test_the_judge_names_the_judge_context_it_weighed_in_its_reason():
    context = "- Four products are expected.\n- Prices are in dollars."

    judgment = json.loads(final_text(ScriptedDemoModel()(judge_request("success: true", context=context))))

    assert judgment["verdict"] == "pass"
    assert judgment["reason"].endswith(
        "Judge context weighed first: “Four products are expected.”; “Prices are in dollars.”."
    )


def test_a_success_the_judge_context_contradicts_fails_naming_the_statement():
    statement = 'The output must name the "Aurora Desk Lamp".'

    judgment = json.loads(final_text(ScriptedDemoModel()(judge_request("success: true", context=f"- {statement}"))))
    again = json.loads(final_text(ScriptedDemoModel()(judge_request("success: true", context=f"- {statement}"))))

    assert judgment["verdict"] == "fail"
    assert f"the judge context says “{statement}”" in judgment["reason"]
    assert "shows “Aurora Desk Lamp”" in judgment["reason"]
    assert again == judgment  # deterministic: the same request, the same judgment


def test_a_judge_context_the_output_satisfies_passes():
    judgment = json.loads(
        final_text(ScriptedDemoModel()(judge_request("success: true", context='- It must say "four products".')))
    )

    assert judgment["verdict"] == "pass"
    assert '“It must say "four products".”' in judgment["reason"]


def test_the_judge_reads_the_judge_context_the_judge_sends(acme):
    """The statements as judge.judging builds the real judge's request, not a hand-written prompt."""
    from judge.judging import judge_request as real_judge_request
    from tests.support.judging import finished_run

    run = finished_run(acme, judge=False, judge_context=['The output names the "Mixer" and its price.'])
    passing = ScriptedDemoModel()(real_judge_request(run, run.judge_context, MODEL))
    failing = ScriptedDemoModel()(real_judge_request(run, ['The output names the "Blender".'], MODEL))

    assert json.loads(final_text(passing))["verdict"] == "pass"
    assert '“The output names the "Mixer" and its price.”' in json.loads(final_text(passing))["reason"]
    assert json.loads(final_text(failing))["verdict"] == "fail"
    assert "“Blender”" in json.loads(final_text(failing))["reason"]


@pytest.mark.parametrize(("iteration", "result"), [(0, "needs_revision"), (1, "satisfied"), (2, "satisfied")])
def test_the_grader_asks_for_one_revision_then_is_satisfied(iteration: int, result: str):
    schema = {"type": "object", "properties": {"result": {"type": "string"}, "explanation": {"type": "string"}}}
    request = {
        "model": MODEL,
        "max_tokens": 1024,
        "output_config": {"format": {"type": "json_schema", "schema": schema}},
        "messages": [
            {"role": "user", "content": f"# Evaluation cycle\nIteration {iteration} of at most 3 (0-indexed)."}
        ],
    }

    evaluation = json.loads(final_text(ScriptedDemoModel()(request)))

    assert evaluation["result"] == result
    assert evaluation["explanation"]


def test_the_judge_over_the_wire_passes_the_strict_checks_and_thinks_first():
    with scripted_model_server() as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="scripted-demo", max_retries=0)
        reply = client.beta.messages.create(**judge_request("success: true"))

    assert [block.type for block in reply.content] == ["thinking", "text"]
    assert json.loads(reply.content[1].text)["verdict"] == "pass"
    assert server.refusals == []


def test_product_lines_with_the_price_on_the_next_line_are_parsed():
    assert parse_products("Lamp\n$5.00\n\nMug\n$6.50") == [{"name": "Lamp", "price": 5}, {"name": "Mug", "price": 6.5}]


def test_snapshot_refs_are_read_in_both_notations():
    controls = parse_controls('- textbox "Name" [ref=e4]\n- button "Send" [ref_9]\n- heading "Hi" [level=1]')

    assert [(control.role, control.name, control.ref) for control in controls] == [
        ("textbox", "Name", "e4"),
        ("button", "Send", "ref_9"),
    ]


def test_conform_fills_required_fields_and_respects_enums():
    schema = {
        "type": "object",
        "properties": {"status": {"enum": ["ok", "bad"]}, "n": {"type": "integer"}, "tags": {"type": "array"}},
        "required": ["status", "n"],
    }

    assert conform({"status": "weird", "tags": ["a"]}, schema) == {"status": "ok", "n": 0, "tags": ["a"]}


def test_the_scripted_model_answers_the_real_sdk_over_the_wire():
    with scripted_model_server() as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="scripted-demo", max_retries=0)
        conversation = Conversation(SHOP_TASK, ITEMS_SCHEMA)
        first = client.beta.messages.create(**conversation.request())
        second = client.beta.messages.create(**conversation.request())
        # The reply goes back exactly as received, thinking block and all, with the browser's answer.
        conversation.messages.append({"role": "assistant", "content": [b.model_dump() for b in first.content]})
        navigate = first.content[-1]
        conversation.answer(navigate.model_dump(), "Navigated to http://127.0.0.1:8123/demo/shop/")
        third = client.beta.messages.create(
            **conversation.request(), thinking={"type": "adaptive", "display": "updates"}
        )

    call = first.content[-1]
    assert (call.name, call.toolset_name, call.input) == (
        "navigate",
        "browser",
        {"url": "http://127.0.0.1:8123/demo/shop/"},
    )
    assert first.model == MODEL
    assert first.stop_reason == "tool_use"
    # Sonnet 5.5 thinks by default, and by default does not show the text: the block comes back empty but signed.
    assert (first.content[0].type, first.content[0].thinking) == ("thinking", "")
    assert first.content[0].signature
    assert third.content[0].type == "thinking"
    assert third.content[0].thinking == "The shop is open; I'll read the product list."
    assert third.content[-1].name == "get_page_text"
    assert server.refusals == []
    assert first.usage.input_tokens > 0
    assert (first.usage.input_tokens, first.usage.output_tokens) == (
        second.usage.input_tokens,
        second.usage.output_tokens,
    )


def test_the_management_command_serves_until_terminated():
    command = subprocess.Popen(
        [sys.executable, "-m", "scripted_api", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        banner = command.stdout.readline()
        base_url = banner.split(" on ")[1].split(" ")[0]
        client = anthropic.Anthropic(base_url=base_url, api_key="scripted-demo", max_retries=0)
        reply = client.messages.create(**Conversation("Book a flight.").request())
        assert reply.content[-1].input == {"success": False, "output": UNKNOWN_TASK_OUTPUT}
    finally:
        command.send_signal(signal.SIGTERM)
        assert command.wait(timeout=10) == 0


# --- the scripted trajectories against the real demo site in real Chromium ------------------------------------


@pytest.fixture(scope="module")
def browser_host() -> Iterator[BrowserHost]:
    host = BrowserHost(CHROMIUM)
    yield host
    host.close()


def play(browser_host, task: str, data_schema: dict | None = None, max_steps: int = 15) -> tuple[dict, list[str]]:
    """Run the scripted agent through the real Playwright toolset until it calls done; returns done's input."""

    async def build() -> PlaywrightBrowserToolset:
        toolset = PlaywrightBrowserToolset(
            context=await browser_host.new_context(None),
            network_guard=NetworkGuard(allowed_private_hosts={"127.0.0.1", "localhost"}),
        )
        await toolset.install_guard()
        return toolset

    toolset = browser_host.run(build(), timeout=30)
    conversation = Conversation(task, data_schema)
    names = []
    try:
        for _ in range(max_steps):
            call = conversation.next_call()
            names.append(call["name"])
            if call["name"] == DONE_TOOL:
                return call["input"], names
            content = browser_host.run(toolset.call(BetaToolsetCallContext(), call["name"], call["input"]), timeout=60)
            conversation.answer(call, content)
    finally:
        browser_host.run(toolset.close(), timeout=30)
    raise AssertionError(f"no done after {max_steps} steps: {names}")


@pytest.mark.browser
@pytest.mark.urls("demo_site.server_urls")  # the demo site's own server, as `make run` serves it
def test_the_shop_trajectory_reads_the_real_first_page(browser_host, live_server):
    done, names = play(
        browser_host,
        f"List the products on the first page of the demo shop.\nStart URL: {live_server.url}/demo/shop/",
        ITEMS_SCHEMA,
    )

    assert names == ["navigate", "get_page_text", DONE_TOOL]
    assert done["success"] is True
    assert done["data"] == {
        "items": [{"name": product.name, "price": float(product.price)} for product in PRODUCTS[:4]]
    }


@pytest.mark.browser
@pytest.mark.urls("demo_site.server_urls")  # the demo site's own server, as `make run` serves it
def test_the_contact_trajectory_sends_the_real_form(browser_host, live_server):
    done, names = play(
        browser_host, f"Send the demo shop a message through its contact form.\nStart URL: {live_server.url}/demo/"
    )

    assert names == ["navigate", "read_page", *["form_input"] * 5, "left_click", "get_page_text", DONE_TOOL]
    assert done["success"] is True, done
