"""Who may use /mcp: a workspace's active API key as a bearer token, and only so many requests a minute; everything else
is refused before any tool runs, in the error the MCP client raises and with the API's status and envelope."""

import asyncio
from datetime import timedelta

import httpx2
import pytest
from django.utils import timezone
from mcp import Client, MCPError

from agent_platform.asgi import application
from agent_platform.models import ApiKey
from mcp_server.tools import server
from tests.support import live
from tests.support.factories import make_run
from tests.support.mcp_client import MODES, call, connected, data_of, text_of

pytestmark = pytest.mark.usefixtures("transactional_db")

asgi_server = live.asgi_server

REFUSED = "authentication_error: A valid API key is required: send 'Authorization: Bearer <key>'."
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}},
}


def refusal_on_connect(url: str, key: str | None, **options) -> str:
    async def connect():
        async with connected(url, key, **options):
            pass

    # The client raises from its task groups: the MCPError may come wrapped in exception groups.
    with pytest.raises((MCPError, BaseExceptionGroup)) as raised:
        asyncio.run(connect())
    error = raised.value
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    assert isinstance(error, MCPError), raised.value
    return str(error)


@pytest.mark.parametrize("mode", MODES)
def test_a_wrong_key_is_refused(mode, asgi_server, acme_key):
    wrong = acme_key[:-4] + ("aaaa" if not acme_key.endswith("aaaa") else "bbbb")
    assert REFUSED in refusal_on_connect(f"{asgi_server}/mcp", wrong, mode=mode)


def test_no_key_another_scheme_a_revoked_and_an_expired_key_are_refused(asgi_server, acme):
    url = f"{asgi_server}/mcp"
    revoked_key, revoked = ApiKey.issue(acme, name="revoked")
    revoked_key.revoke()
    expired = ApiKey.issue(acme, name="expired", expires_at=timezone.now() - timedelta(minutes=1)).secret
    for key in (None, revoked, expired):
        assert REFUSED in refusal_on_connect(url, key)

    live_key = ApiKey.issue(acme, name="live").secret
    for authorization in (f"Basic {live_key}", live_key, "Bearer"):
        response = httpx2.post(url, json=INITIALIZE, headers={"Authorization": authorization})
        assert response.status_code == 401 and response.headers["WWW-Authenticate"] == "Bearer"
        assert response.json()["error"]["data"]["error"]["type"] == "authentication_error"


def test_a_refusal_carries_the_api_status_headers_and_envelope(asgi_server):
    response = httpx2.post(
        f"{asgi_server}/mcp",
        json=INITIALIZE,
        headers={"Authorization": "Bearer ph_nothing_here", "Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert body["error"]["message"].startswith(REFUSED)
    assert body["error"]["data"]["error"]["type"] == "authentication_error"


def test_a_working_key_records_its_use(asgi_server, acme):
    key, secret = ApiKey.issue(acme, name="used")
    assert key.last_used_at is None
    assert data_of(call(f"{asgi_server}/mcp", secret, "list_runs")) == {
        "runs": [],
        "next_cursor": None,
        "has_more": False,
    }
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_requests_past_the_keys_rate_limit_are_refused_with_retry_after(settings, acme_key):
    # In process (the limit is the web process's setting): the ASGI application itself, through httpx2's transport.
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    transport = httpx2.ASGITransport(app=application)
    headers = {"Authorization": f"Bearer {acme_key}", "Accept": "application/json, text/event-stream"}

    async def requests():
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return [await http.post("/mcp", json=INITIALIZE, headers=headers) for _ in range(4)]

    answered = asyncio.run(requests())
    assert [response.status_code for response in answered] == [200, 200, 200, 429]
    refused = answered[-1]
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    retry_after = refused.headers["Retry-After"]
    assert (
        refused.json()["error"]["message"]
        == f"rate_limited: Too many requests for this API key; retry after {retry_after}s."
    )
    assert "rate_limited: Too many requests" in refusal_on_connect(
        "http://testserver/mcp", acme_key, transport=transport
    )


def test_a_tool_reached_without_the_endpoint_refuses():
    """The tools trust only what the endpoint admitted: the server reached in process, without it, answers nothing."""

    async def get_run():
        async with Client(server) as client:
            return await client.call_tool("get_run", {"run_id": "run_anything"})

    result = asyncio.run(get_run())
    assert result.is_error and text_of(result).startswith(REFUSED)


def test_another_workspaces_run_is_not_found(asgi_server, acme, umbrella_key):
    run = make_run(acme)
    url = f"{asgi_server}/mcp"
    for tool in ("get_run", "wait_for_run", "cancel_run", "rejudge_run"):
        result = call(url, umbrella_key, tool, {"run_id": run.public_id})
        assert result.is_error and text_of(result) == f"not_found: No run '{run.public_id}' in this workspace.", tool
    assert data_of(call(url, umbrella_key, "list_runs"))["runs"] == []
    run.refresh_from_db()
    assert run.status == "queued" and run.cancel_requested_at is None, "untouched by another workspace's calls"
