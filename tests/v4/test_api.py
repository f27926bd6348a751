"""The v4 API in process: what a launch's v4 fields become on the run, events as v4 reads them, sessions' title,
deletion and budget, and the pieces under them (secrets' allowed domains, the session's headroom, the ids)."""

import json
import uuid
from decimal import Decimal

import pytest
from django.test import Client

from agent_platform.models import ModelRequest
from browser_use_v4.mapping import v4_refusal, workspace_uuid
from runs.events import emit
from runs.models import Run, Session
from runs.secret_box import unseal
from runs.secrets import SecretRefusedHere, UnknownSecret, substitute
from runs.spending import headroom
from tests.support.factories import make_run, make_session

pytestmark = pytest.mark.django_db


class V4:
    """The v4 API in process, with Browser Use's header."""

    def __init__(self, key: str):
        self.client = Client(headers={"X-Browser-Use-API-Key": key})

    def call(self, method: str, path: str, body: dict | None = None):
        kwargs = {"data": json.dumps(body), "content_type": "application/json"} if body is not None else {}
        return getattr(self.client, method)(f"/api/v4{path}", **kwargs)


@pytest.fixture
def v4(acme_key) -> V4:
    return V4(acme_key)


def test_a_launch_maps_secrets_their_domains_the_screen_size_model_params_and_the_judge_context(v4, acme):
    answer = v4.call(
        "post",
        "/runs",
        {
            "task": "Sign in.",
            "secretBindings": [
                {
                    "alias": "shop_password",
                    "source": {"type": "inline", "value": "hunter22"},
                    "allowedDomains": ["Shop.Example.com"],
                }
            ],
            "browserSettings": {"screenWidth": 1024, "screenHeight": 700, "proxyCountryCode": None},
            "modelParams": {"thinking": {"type": "adaptive"}},
            "judge": {"context": "The account is Ada's.\n\n  Sign-in counts as done.  "},
            "maxCostUsd": 3,
            "keepAlive": 300,
        },
    )
    assert answer.status_code == 202, answer.content
    body = answer.json()
    run = Run.objects.get(uuid=body["id"])
    assert body["sessionId"] == str(run.session.uuid) and body["workspaceId"] == str(workspace_uuid(acme))
    assert body["eventsUrl"] == f"/api/v4/runs/{run.uuid}/events" and body["status"] == "queued"
    assert unseal(run.secrets) == {"SHOP_PASSWORD": "hunter22"}
    assert run.secret_domains == {"SHOP_PASSWORD": ["shop.example.com"]}
    assert (run.viewport_width, run.viewport_height) == (1024, 700)
    assert run.thinking == "adaptive" and run.judge is True
    assert run.judge_context == ["The account is Ada's.", "Sign-in counts as done."]
    assert run.max_cost_usd == Decimal(3) and run.session.max_cost_usd == Decimal(3)
    summary = v4.call("get", f"/runs/{run.uuid}").json()
    assert summary["modelParams"] == {"thinking": {"type": "adaptive"}} and summary["totalCostUsd"] == "0"
    assert "hunter22" not in json.dumps(summary)

    follow_up = v4.call("post", "/runs", {"task": "Again.", "sessionId": str(run.session.uuid)})
    assert Run.objects.get(uuid=follow_up.json()["id"]).max_cost_usd == Decimal(3), "the session's budget"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"modelParams": {"temperature": 1}}, "modelParams.temperature:"),
        ({"modelParams": {"thinking": "on"}}, "modelParams.thinking:"),
        ({"modelParams": {"output_config": {"effort": "high", "x": 1}}}, "modelParams.output_config:"),
        (
            {
                "secretBindings": [
                    {"alias": "a b", "source": {"type": "inline", "value": "hunter22"}, "allowedDomains": ["x.com"]}
                ]
            },
            "secretBindings[0].alias:",
        ),
        (
            {"secretBindings": [{"alias": "pw", "source": {"type": "inline"}, "allowedDomains": ["x.com"]}]},
            "secretBindings[0].source.value:",
        ),
        (
            {
                "secretBindings": [
                    {"alias": "pw", "source": {"type": "inline", "value": "hunter22"}, "allowedDomains": ["*.x.com"]}
                ]
            },
            "secretBindings[0].allowedDomains:",
        ),
        (
            {
                "secretBindings": [
                    {"alias": "pw", "source": {"type": "inline", "value": "hunter22"}, "allowedDomains": ["no pe"]}
                ]
            },
            "secretBindings[0].allowedDomains:",
        ),
        (
            {
                "secretBindings": [
                    {"alias": "pw", "source": {"type": "inline", "value": "hunter22"}, "allowedDomains": ["x.com"]},
                    {"alias": "PW", "source": {"type": "inline", "value": "hunter23"}, "allowedDomains": ["x.com"]},
                ]
            },
            "secretBindings[1].alias:",
        ),
        ({"browserSettings": {"screenWidth": 100}}, "browserSettings.screenWidth:"),
        ({"sessionId": "sess_nothere"}, "Session sess_nothere not found"),
    ],
)
def test_refused_launch_fields_say_which_in_v4s_words(v4, body, message):
    answer = v4.call("post", "/runs", {"task": "t", **body})
    assert answer.status_code in (404, 422)
    assert message in answer.json()["detail"]
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "feature"),
    [
        ({"opVaultId": "v"}, "1Password vaults"),
        ({"agentcardWalletId": str(uuid.uuid4())}, "payments"),
        ({"browserSettings": {"customProxy": {"host": "p"}}}, "proxies"),
        ({"browserSettings": {"proxyCountryCode": "de"}}, "proxies"),
        ({"browserSettings": {"extensionIds": ["e"]}}, "browser extensions"),
        ({"browserSettings": {"record": True}}, "recordings"),
        ({"browserSettings": {"allowResizing": True}}, "resizing over CDP"),
        (
            {
                "secretBindings": [
                    {"alias": "pw", "source": {"type": "onepassword", "vaultId": "v"}, "allowedDomains": ["x.com"]}
                ]
            },
            "1Password secrets",
        ),
    ],
)
def test_launch_fields_of_missing_features_are_501_naming_them(v4, body, feature):
    answer = v4.call("post", "/runs", {"task": "t", **body})
    assert answer.status_code == 501
    assert answer.json()["detail"].startswith(f"Pilothouse's v4 API does not serve {feature}")


def test_events_read_as_v4_with_browser_ready_before_the_first_agent_event_and_a_terminal_type(v4, acme):
    run = make_run(acme)
    emit(run, "run.started", {"model": run.model})
    emit(run, "agent.usage", {"input_tokens": 5})
    emit(run, "agent.tool_use", {"name": "navigate"})
    emit(run, "run.finished", {"status": "cancelled"})
    events = v4.call("get", f"/runs/{run.uuid}/events").json()
    assert [(event["id"], event["type"]) for event in events["events"]] == [
        (1, "run.started"), (2, "browser.ready"), (2, "agent.usage"), (3, "agent.tool_use"), (4, "run.cancelled")
    ]  # fmt: skip
    assert events["nextAfter"] == 4 and events["hasMore"] is False
    assert events["events"][0]["runId"] == str(run.uuid) and events["events"][1]["data"] == {}
    page = v4.call("get", f"/runs/{run.public_id}/events?after=1&limit=1").json()
    assert [event["type"] for event in page["events"]] == ["browser.ready", "agent.usage"]
    assert (page["nextAfter"], page["hasMore"]) == (2, True)
    after = v4.call("get", f"/runs/{run.uuid}/events?after=2").json()
    assert [event["type"] for event in after["events"]] == ["agent.tool_use", "run.cancelled"]
    for status, type in (("succeeded", "run.completed"), ("failed", "run.failed")):
        other = make_run(acme)
        emit(other, "run.finished", {"status": status})
        assert v4.call("get", f"/runs/{other.uuid}/events").json()["events"][0]["type"] == type


def test_runs_list_newest_first_with_cursors_and_a_summary_maps_data_output_and_error(v4, acme, umbrella):
    session = make_session(acme, output_schema={"type": "object"})
    older = make_run(acme, session, status="succeeded", output="Found.", data={"n": 1}, cost_usd=Decimal("0.012300"))
    newer = make_run(acme, session, status="failed", error_code="cost_limit", error_message="Too dear.")
    make_run(umbrella)
    first = v4.call("get", "/runs?limit=1").json()
    assert [run["id"] for run in first["runs"]] == [str(newer.uuid)] and first["hasMore"] is True
    second = v4.call("get", f"/runs?limit=1&cursor={first['nextCursor']}").json()
    summary = second["runs"][0]
    assert summary["id"] == str(older.uuid) and second["hasMore"] is False
    assert (summary["status"], summary["result"], summary["output"]) == ("completed", "Found.", {"n": 1})
    assert summary["totalCostUsd"] == "0.0123" and summary["outputSchema"] == {"type": "object"}
    failed = v4.call("get", f"/runs/{newer.uuid}").json()
    assert failed["error"] == "cost_limit: Too dear." and failed["output"] is None and failed["result"] is None
    by_session = v4.call("get", f"/runs?sessionId={session.public_id}").json()
    assert len(by_session["runs"]) == 2


def test_a_session_is_renamed_costed_capped_and_deleted_keeping_its_bill(v4, acme):
    session = make_session(acme)
    run = make_run(acme, session, status="running", cost_usd=Decimal("0.5"))
    ModelRequest.objects.create(workspace=acme, run=run, source="agent", model="m", cost_usd=Decimal("0.5"))
    make_session(acme)  # without runs: not a v4 session
    listed = v4.call("get", "/sessions").json()
    assert [item["sessionId"] for item in listed["sessions"]] == [str(session.uuid)]
    renamed = v4.call("patch", f"/sessions/{session.uuid}", {"title": "Checkout"}).json()
    assert renamed["title"] == "Checkout" and renamed["latestRunId"] == str(run.uuid)
    assert renamed["status"] == "running"
    assert v4.call("patch", f"/sessions/{session.uuid}", {"title": None}).json()["title"] is None
    cost = v4.call("get", f"/sessions/{session.uuid}/cost").json()
    assert (cost["numRuns"], cost["llmCostUsd"], cost["totalCostUsd"], cost["proxyCostUsd"]) == (1, "0.5", "0.5", "0")
    capped = v4.call("patch", f"/sessions/{session.uuid}/cost-cap", {"maxCostUsd": "0.75"}).json()
    assert capped == {"sessionId": str(session.uuid), "maxCostUsd": "0.75"}
    refused = v4.call("patch", f"/sessions/{session.uuid}/cost-cap", {"maxCostUsd": 0})
    assert refused.status_code == 422 and refused.json()["detail"].startswith("maxCostUsd:")

    # A running run stops at its worker's next safe point: the delete says to retry until it has.
    stopping = v4.call("delete", f"/sessions/{session.uuid}")
    assert stopping.status_code == 503 and stopping["Retry-After"] == "1"
    Run.objects.filter(pk=run.pk).update(status="cancelled")
    assert v4.call("delete", f"/sessions/{session.uuid}").status_code == 204
    assert not Session.objects.filter(pk=session.pk).exists()
    assert ModelRequest.objects.get().cost_usd == Decimal("0.5"), "the bill keeps the request"
    assert v4.call("get", f"/sessions/{session.uuid}").status_code == 404


def test_the_session_budget_is_the_nearest_cap_once_its_runs_have_spent_toward_it(acme, settings):
    settings.SCRIPTED_MODEL = False
    session = make_session(acme, max_cost_usd=Decimal("1"))
    make_run(acme, session, cost_usd=Decimal("0.7"))
    run = make_run(acme, session, max_cost_usd=Decimal("1"), cost_usd=Decimal("0.1"))
    room = headroom(run)
    assert (room.left, room.cap) == (Decimal("0.2"), "session")
    assert room.describe() == "this session's budget of $1 ($0.8000 spent by its runs)"


def test_a_secret_is_typed_only_on_its_allowed_hosts_and_their_subdomains():
    secrets, domains = {"PW": "hunter22", "PIN": "1234"}, {"PW": ["shop.example.com"]}
    typed = "{{secret:PW}}"
    assert substitute(typed, secrets, url="https://shop.example.com/login", domains=domains) == "hunter22"
    assert substitute(typed, secrets, url="https://eu.shop.example.com/", domains=domains) == "hunter22"
    assert substitute("{{secret:PIN}}", secrets, url="https://any.where/", domains=domains) == "1234"
    for url in ("https://evil.example.com/", "https://shop.example.com.evil.io/", "about:blank"):
        with pytest.raises(SecretRefusedHere, match=r"may be typed only on shop\.example\.com"):
            substitute(typed, secrets, url=url, domains=domains)
    with pytest.raises(UnknownSecret):
        substitute("{{secret:NONE}}", secrets, url="https://shop.example.com/", domains=domains)


def test_v1_reads_a_run_and_a_session_by_their_uuid(api, acme):
    run = make_run(acme)
    assert api.get(f"/runs/{run.uuid}").json()["id"] == run.public_id
    assert api.get(f"/sessions/{run.session.uuid}").json()["id"] == run.session.public_id
    assert api.get(f"/runs/{uuid.uuid4()}").status_code == 404


def test_a_refusal_without_a_v4_name_is_kept_as_it_is():
    from agent_platform.errors import InvalidRequest

    kept = InvalidRequest.of_field("start_url", "must be a URL")
    assert v4_refusal(kept) is kept
    renamed = v4_refusal(InvalidRequest.of_field("judge_context[0]", "is too long"))
    assert (renamed.message, renamed.field) == ("judge.context[0]: is too long", "judge.context[0]")


def test_the_run_and_session_pages_open_by_uuid_too(alice_client, acme, charlie_client):
    run = make_run(acme)
    assert alice_client.get(f"/runs/{run.uuid}/").status_code == 200
    assert alice_client.get(f"/sessions/{run.session.uuid}/").status_code == 200
    assert charlie_client.get(f"/runs/{run.uuid}/").status_code == 404


@pytest.mark.parametrize(
    ("raw", "content_type", "status", "detail"),
    [
        ('{"task": "t",}', "application/json", 422, "Invalid request body: not valid JSON at line 1, column 14: "),
        ('{"task": "a", "task": "b"}', "application/json", 422, 'the member "task" appears twice'),
        ('{"task": "t"}', "text/plain", 415, "The request body must be sent as application/json"),
    ],
)
def test_the_api_s_one_parser_answers_in_v4s_shape(v4, raw, content_type, status, detail):
    answer = v4.client.post("/api/v4/runs", data=raw, content_type=content_type)

    assert answer.status_code == status
    assert detail in answer.json()["detail"]
    assert "Expecting" not in answer.json()["detail"]
    assert Run.objects.count() == 0


@pytest.mark.parametrize("cursor", ["bogus", "1.2\n", "eyJhIjogMX0"])
def test_a_cursor_of_another_shape_is_refused_in_v4s_words_not_a_server_error(v4, cursor):
    for path in ("/runs", "/sessions"):
        answer = v4.client.get(f"/api/v4{path}", {"cursor": cursor})
        assert answer.status_code == 422, answer.content
        assert answer.json()["detail"] == "cursor: not a cursor this API returned."
