"""The official MCP client (the `mcp` SDK's Client over streamable HTTP) against /mcp: with a key or none, in either
protocol era, over a real socket to Daphne or in process through httpx2's ASGI transport."""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

# "auto" is the SDK's default (it probes for the 2026-07-28 per-request era); "legacy" is the initialize handshake
# Claude Code and most clients in the field speak.
MODES = ["auto", "legacy"]


@asynccontextmanager
async def connected(
    url: str, key: str | None, *, mode: str = "auto", transport: httpx2.AsyncBaseTransport | None = None
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    timeout = httpx2.Timeout(30, read=120)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, transport=transport) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


def with_client(url: str, key: str | None, scenario: Callable[[Client], Awaitable[Any]], **options: Any) -> Any:
    """Run `scenario(client)` with a connected client, from a synchronous test."""

    async def main() -> Any:
        async with connected(url, key, **options) as client:
            return await scenario(client)

    return asyncio.run(main())


def call(url: str, key: str | None, tool: str, arguments: dict | None = None, **options: Any) -> CallToolResult:
    """One tool call on a connection of its own."""
    return with_client(url, key, lambda client: client.call_tool(tool, arguments or {}), **options)


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def data_of(result: CallToolResult) -> dict:
    """A successful call's structured content, which its last text block repeats as JSON for text-only clients."""
    assert not result.is_error, text_of(result)
    assert json.loads(result.content[-1].text) == result.structured_content
    return result.structured_content
