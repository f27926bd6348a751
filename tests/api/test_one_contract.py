"""One launch contract: the same wrong value is refused with the same rule's words through /api/v1, Browser Use v4,
MCP, schedules and batches (each door names the field its own way), and nothing is launched."""

import asyncio
import json

import httpx2
import pytest
from django.conf import settings
from django.test import Client

from agent_platform.asgi import application
from runs.models import Run
from schedules.models import Schedule
from tests.support.mcp_client import connected, text_of

pytestmark = pytest.mark.usefixtures("transactional_db")

EVERY_MINUTE = {"name": "Every minute", "cron": "* * * * *", "timezone": "UTC"}

# Each case: the launch fields (in the launch's own names) and the rule's words every door must answer with.
CASES = {
    "blank task": ({"task": " \t "}, "is required and must not be empty"),
    "schema not an object": (
        {"task": "x", "output_schema": {"type": "string"}},
        'at $.type: the root must be an object schema ("type": "object")',
    ),
    "malformed model": (
        {"task": "x", "model": "no such model"},
        "must be a model name such as 'claude-sonnet-5-5' (letters, digits, . _ : @ / -)",
    ),
    "unknown model": (
        {"task": "x", "model": "claude-nothing-1"},
        "'claude-nothing-1' is not a model the Models API knows; pick one of the active models",
    ),
    "effort the model lacks": ({"task": "x", "effort": "turbo"}, None),  # the words name the default model's levels
}


def rule_of(message: str) -> str:
    """A refusal's words after the field it names ("run.task: is required..." -> "is required...")."""
    assert ": " in message, message
    return message.split(": ", 1)[1]


def through_v1(key: str, fields: dict) -> str:
    response = Client().post(
        "/api/v1/runs", json.dumps(fields), content_type="application/json", headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 400, response.content
    return response.json()["error"]["message"]


def through_v4(key: str, fields: dict) -> str:
    body: dict = {"task": fields["task"]}
    if "output_schema" in fields:
        body["outputSchema"] = fields["output_schema"]
    if "model" in fields:
        body["model"] = fields["model"]
    if "effort" in fields:
        body["modelParams"] = {"output_config": {"effort": fields["effort"]}}
    response = Client().post(
        "/api/v4/runs", json.dumps(body), content_type="application/json", headers={"X-Browser-Use-API-Key": key}
    )
    assert response.status_code == 422, response.content
    return response.json()["detail"]


def through_mcp(key: str, fields: dict) -> str:
    async def launch():
        transport = httpx2.ASGITransport(app=application)
        async with connected("http://testserver/mcp", key, transport=transport) as client:
            return await client.call_tool("launch_run", fields)

    result = asyncio.run(launch())
    assert result.is_error, result.structured_content
    code, message = text_of(result).split(": ", 1)
    assert code == "invalid_request"
    return message


def through_schedules(key: str, fields: dict) -> str:
    response = Client().post(
        "/api/v1/schedules",
        json.dumps({**EVERY_MINUTE, "run": fields}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 400, response.content
    return response.json()["error"]["message"]


def through_batches(key: str, fields: dict) -> str:
    task = {name: fields[name] for name in ("task", "output_schema") if name in fields}
    config = {name: fields[name] for name in ("model", "effort") if name in fields}
    response = Client().post(
        "/api/v1/batches",
        json.dumps({"tasks": [task], "configs": [config]}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 400, response.content
    return response.json()["error"]["message"]


DOORS = {
    "api/v1": through_v1,
    "v4": through_v4,
    "mcp": through_mcp,
    "schedules": through_schedules,
    "batches": through_batches,
}


@pytest.mark.parametrize("case", CASES)
def test_every_door_refuses_the_same_input_with_the_same_rule(case, acme_key):
    fields, words = CASES[case]
    answers = {door: send(acme_key, fields) for door, send in DOORS.items()}
    rules = {door: rule_of(message) for door, message in answers.items()}
    expected = words or rules["api/v1"]
    assert rules == dict.fromkeys(DOORS, expected), answers
    if case == "effort the model lacks":
        assert expected.startswith(f"'turbo' is not an effort level of {settings.DEFAULT_MODEL}: low, medium, high")
    assert not Run.objects.exists() and not Schedule.objects.exists()
