"""The extract tool: a separate model request reads the page's full text and only the answer comes back, billed as
an `extraction` request of the run."""

import json

import pytest

from agent_platform.models import ModelRequest
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.toolset import PlaywrightBrowserToolset
from runtime.extraction import EXTRACT_TOOL, extract, extract_tool, page_text_of
from scripted_api.wire import text_reply
from tests.support import browsers
from tests.support.factories import make_run

host = browsers.host  # the module's browser host (a fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.browser]


@pytest.fixture
def page_text(host, site) -> str:
    """The full text of a 40,000-character catalogue page, read as the extract tool reads it."""

    async def read() -> str:
        context = await host.new_context()
        toolset = PlaywrightBrowserToolset(
            context=context, network_guard=NetworkGuard(allowed_private_hosts={"127.0.0.1"})
        )
        await toolset.install_guard()
        await toolset.open(f"{site}/catalogue.html?page=3")
        text = await page_text_of(toolset)
        await toolset.close()
        return text

    return host.run(read(), timeout=60)


def test_the_tool_asks_for_a_query_and_an_optional_schema():
    tool = extract_tool()
    assert tool["name"] == EXTRACT_TOOL
    assert tool["input_schema"]["required"] == ["query"]
    assert set(tool["input_schema"]["properties"]) == {"query", "schema"}


def test_extract_answers_from_the_whole_page_with_the_workspace_model_billed_as_extraction(
    messages_stub, acme, page_text
):
    assert len(page_text) > 39_000 and "Item 3-7:" in page_text
    run = make_run(acme, model="claude-sonnet-5-5")
    messages_stub.agent(text_reply("Item 3-7, a mug at 3.10 EUR."))
    result = extract(run, {"query": "Which item is the cheapest?"}, page_text, "http://shop.test/catalogue")
    assert (result.text, result.is_error) == ("Item 3-7, a mug at 3.10 EUR.", False)
    [request] = messages_stub.requests
    assert request["model"] == "claude-haiku-5-5"
    assert "tools" not in request and "tool_choice" not in request
    sent = "\n".join(block["text"] for block in request["messages"][0]["content"])
    assert page_text in sent and "Which item is the cheapest?" in sent
    [row] = ModelRequest.objects.filter(run=run)
    assert (row.source, row.model) == ("extraction", "claude-haiku-5-5")
    assert row.input_tokens > 9_000, "the page's tokens are paid by the extraction request, not the agent's"
    run.refresh_from_db()
    assert run.usage_requests == 1 and run.cost_usd == row.cost_usd > 0


def test_a_workspace_without_an_extraction_model_uses_the_runs_model(messages_stub, acme, page_text):
    acme.extraction_model = ""
    acme.save()
    run = make_run(acme, model="claude-sonnet-4-6")
    messages_stub.agent(text_reply("Seven rows mention Lyon."))
    extract(run, {"query": "Where are they in stock?"}, page_text)
    assert messages_stub.requests[0]["model"] == "claude-sonnet-4-6"


def test_with_a_schema_the_answer_is_json_in_that_shape(messages_stub, acme, page_text):
    run = make_run(acme)
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "price": {"type": "number"}},
        "required": ["name", "price"],
    }
    messages_stub.agent(text_reply('{"name": "Item 3-7", "price": 3.10}'))
    result = extract(run, {"query": "The cheapest item", "schema": schema}, page_text)
    assert not result.is_error
    assert json.loads(result.text) == {"name": "Item 3-7", "price": 3.1}
    assert json.dumps(schema) in messages_stub.requests[0]["messages"][0]["content"][1]["text"]


def test_an_answer_outside_the_schema_is_an_error_the_agent_sees(messages_stub, acme, page_text):
    run = make_run(acme)
    schema = {"type": "object", "properties": {"price": {"type": "number"}}, "required": ["price"]}
    messages_stub.agent(text_reply('{"price": "cheap"}'))
    result = extract(run, {"query": "The lowest price", "schema": schema}, page_text)
    assert result.is_error and "did not match the schema" in result.text
    assert ModelRequest.objects.filter(run=run, source="extraction").count() == 1, "the request is billed anyway"


@pytest.mark.parametrize(
    "given, message",
    [
        ({}, "query must be a non-empty string"),
        ({"query": "  "}, "query must be a non-empty string"),
        ({"query": "x" * 2_001}, "the limit is 2000"),
        ({"query": "prices", "schema": {"type": "object", "pattern": "x"}}, "at $.schema"),
    ],
)
def test_a_malformed_call_is_refused_without_a_model_request(messages_stub, acme, given, message):
    run = make_run(acme)
    result = extract(run, given, "Some page text.")
    assert result.is_error and message in result.text
    assert messages_stub.requests == []
    assert not ModelRequest.objects.filter(run=run).exists()


def test_an_empty_page_is_answered_without_a_model_request(messages_stub, acme):
    result = extract(make_run(acme), {"query": "prices"}, "   ")
    assert result.is_error and messages_stub.requests == []
