"""The operator pages: every page renders for a member, refuses other workspaces, and shows outside text as text."""

import json

import pytest

from agent_platform.models import ApiKey, ModelRequest
from judge.models import Judgment
from runs.events import emit
from runs.models import Run
from tests.support.factories import make_run, make_session

SCRIPT = "<script>window.pwned=1</script>"
SCHEMA = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}},
    "required": ["items"],
}


@pytest.fixture
def finished_run(acme):
    run = make_run(acme, task=f"Read the page {SCRIPT}", judge=True, status=Run.Status.RUNNING, max_turns=4)
    emit(run, "run.started", {"model": run.model, "max_turns": 4, "scripted": False})
    emit(run, "agent.message", {"text": f"I see {SCRIPT}", "turn": 1})
    emit(
        run,
        "agent.tool_use",
        {"id": "t1", "name": "navigate", "toolset": "browser", "input": {"url": SCRIPT}, "turn": 1},
    )
    emit(run, "agent.tool_result", {"tool_use_id": "t1", "name": "navigate", "content": f"Title: {SCRIPT}\n[notice] 3 of 4 turns used", "notices": [], "is_error": False, "screenshot_url": None, "url": "http://shop.test/"})  # fmt: skip
    emit(run, "agent.tool_result", {"tool_use_id": "t2", "name": "done", "content": "output_schema_violation: at $.items[0].name: 1 is not of type 'string'", "is_error": True})  # fmt: skip
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.SUCCEEDED, success=True, output=f"Found {SCRIPT}", data={"items": [{"name": SCRIPT}]},
        signals={"turns": 3, "max_turns": 4, "verdict_turn": "none", "verdict_followed": True},
    )  # fmt: skip
    emit(run, "run.finished", {"status": "succeeded", "success": True, "error_code": None, "error_message": None})
    Judgment.objects.create(run=run, verdict="pass", reason=f"Judge saw {SCRIPT}")
    run.refresh_from_db()
    return run


def test_runs_list_shows_columns_and_escapes_task(alice_client, finished_run):
    response = alice_client.get("/")
    html = response.content.decode()
    assert response.status_code == 200
    assert finished_run.public_id in html
    assert SCRIPT not in html
    assert "&lt;script&gt;" in html
    assert 'class="badge v-pass"' in html
    assert "3/4" in html


@pytest.mark.parametrize(
    ("query", "shown"),
    [("status=succeeded", True), ("status=running", False), ("verdict=success", True), ("verdict=failure", False),
     ("judge=pass", True), ("judge=fail", False), ("q=read+the+page", True), ("q=nothing-like-it", False),
     ("from=2000-01-01", True), ("to=2000-01-01", False)],
)  # fmt: skip
def test_runs_list_filters(alice_client, finished_run, query, shown):
    html = alice_client.get(f"/?{query}").content.decode()
    assert (finished_run.public_id in html) is shown


def test_runs_list_filters_by_session(alice_client, acme, finished_run):
    other = make_run(acme)
    html = alice_client.get(f"/?session={other.session.public_id}").content.decode()
    assert other.public_id in html
    assert finished_run.public_id not in html


def test_a_runs_list_row_carries_the_lists_count_under_its_filters(alice_client, acme, finished_run):
    """The list's heading follows live runs: each re-rendered row comes with the count of the list it belongs to."""
    running = make_run(acme, task="Still going", status=Run.Status.RUNNING)
    page = alice_client.get("/?status=running").content.decode()
    assert '<span id="runs-count" aria-live="polite">1 run</span>' in page
    assert '"/runs/RUN_ID/row/?status=running"' in page  # the rows it asks for are counted under its filter

    assert alice_client.get(f"/runs/{running.public_id}/row/").headers["X-Runs-Count"] == "2"
    assert alice_client.get(f"/runs/{running.public_id}/row/?status=running").headers["X-Runs-Count"] == "1"
    Run.objects.filter(pk=running.pk).update(status=Run.Status.SUCCEEDED)  # it finished: it leaves the filter
    assert alice_client.get(f"/runs/{running.public_id}/row/?status=running").headers["X-Runs-Count"] == "0"


def test_runs_list_paginates(alice_client, acme):
    session = make_session(acme)
    for index in range(55):
        make_run(acme, session=session, task=f"task number {index}")
    first = alice_client.get("/").content.decode()
    second = alice_client.get("/?page=2").content.decode()
    assert "Page 1 of 2" in first
    assert first.count('<tr id="row-') == 50
    assert second.count('<tr id="row-') == 5


def test_run_page_renders_outside_text_as_text(alice_client, finished_run):
    html = alice_client.get(f"/runs/{finished_run.public_id}/").content.decode()
    assert SCRIPT not in html
    assert html.count("&lt;script&gt;window.pwned=1&lt;/script&gt;") >= 5
    assert 'class="line notice">[notice] 3 of 4 turns used' in html
    assert "output_schema_violation: at $.items[0].name" in html
    assert 'class="badge v-pass"' in html
    for seq in range(1, 7):
        assert f'data-seq="{seq}"' in html


def test_run_row_and_summary_fragments(alice_client, charlie_client, finished_run):
    row = alice_client.get(f"/runs/{finished_run.public_id}/row/")
    assert row.status_code == 200
    assert row.content.decode().startswith(f'<tr id="row-{finished_run.public_id}"')
    summary = alice_client.get(f"/runs/{finished_run.public_id}/summary/").content.decode()
    assert 'id="summary"' in summary
    assert "Judge saw &lt;script&gt;" in summary
    assert charlie_client.get(f"/runs/{finished_run.public_id}/row/").status_code == 404
    assert charlie_client.get(f"/runs/{finished_run.public_id}/summary/").status_code == 404


def test_launch_form_launches_through_the_launch_service(alice_client, acme):
    response = alice_client.post(
        "/runs/new/",
        {"task": "List the products", "start_url": "http://127.0.0.1:8001/demo/shop/", "max_turns": "12",
         "output_schema": json.dumps(SCHEMA), "judge": "on", "judge_context": ["Prices are in euros", ""]},
    )  # fmt: skip
    run = Run.objects.get(workspace=acme)
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{run.public_id}/"
    assert run.max_turns == 12
    assert run.judge is True
    assert run.judge_context == ["Prices are in euros"]
    assert run.session.output_schema == SCHEMA


def test_launch_form_shows_the_api_error_for_a_refused_schema(alice_client, acme):
    bad = {"type": "object", "properties": {"url": {"type": "string", "format": "uri"}}}
    response = alice_client.post("/runs/new/", {"task": "x", "output_schema": json.dumps(bad)})
    html = response.content.decode()
    assert response.status_code == 400
    assert "format" in html
    assert "$.properties.url.format" in html
    assert not Run.objects.exists()


def test_follow_up_with_other_schema_is_a_conflict_on_the_form(alice_client, acme):
    session = make_session(acme, output_schema=SCHEMA)
    other = {"type": "object", "properties": {"title": {"type": "string"}}}
    response = alice_client.post(
        "/runs/new/", {"task": "more", "session_id": session.public_id, "output_schema": json.dumps(other)}
    )
    assert response.status_code == 409
    assert "conflict" in response.content.decode()
    page = alice_client.get(f"/runs/new/?session={session.public_id}").content.decode()
    assert 'id="inherited-schema"' in page
    assert "&quot;items&quot;" in page


def test_schema_lint_endpoint_uses_the_api_rules(alice_client, acme):
    def lint(schema_text, session=""):
        url = "/runs/schema-lint/" + (f"?session={session}" if session else "")
        return alice_client.post(url, schema_text, content_type="application/json").json()

    assert lint(json.dumps(SCHEMA)) == {"ok": True, "problems": [], "conflict": None}
    refused = lint(json.dumps({"type": "object", "properties": {"a": {"$ref": "#/x"}}}))
    assert refused["ok"] is False
    assert refused["problems"][0]["path"] == "$.properties.a.$ref"
    assert lint("[1, 2]")["problems"][0]["message"] == "output_schema must be a JSON object"
    assert "not valid JSON" in lint("{nope")["problems"][0]["message"]
    big = {"type": "object", "description": "x" * 9000}
    assert "limit is 8192 bytes" in lint(json.dumps(big))["problems"][0]["message"]
    session = make_session(acme, output_schema=SCHEMA)
    assert lint(json.dumps({"type": "object"}), session.public_id)["conflict"]
    assert lint(json.dumps(SCHEMA), session.public_id)["conflict"] is None


def test_cancel_requests_cancel_of_a_queued_run(alice_client, acme):
    run = make_run(acme)
    response = alice_client.post(f"/runs/{run.public_id}/cancel/")
    run.refresh_from_db()
    assert response.status_code == 302
    assert run.status == Run.Status.CANCELLED


def test_charlie_cannot_cancel_or_rejudge_acme_runs(charlie_client, acme):
    run = make_run(acme)
    assert charlie_client.post(f"/runs/{run.public_id}/cancel/").status_code == 404
    assert charlie_client.post(f"/runs/{run.public_id}/rejudge/").status_code == 404
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED


def test_sessions_pages(alice_client, charlie_client, acme):
    session = make_session(acme, output_schema=SCHEMA)
    first = make_run(acme, session=session, task="first task")
    second = make_run(acme, session=session, task="second task")
    assert session.public_id in alice_client.get("/sessions/").content.decode()
    html = alice_client.get(f"/sessions/{session.public_id}/").content.decode()
    assert html.index(first.public_id) < html.index(second.public_id)
    assert "&quot;items&quot;" in html
    assert charlie_client.get(f"/sessions/{session.public_id}/").status_code == 404
    assert session.public_id not in charlie_client.get("/sessions/").content.decode()


def test_owner_creates_a_key_shown_once_and_revokes_it(alice_client, acme):
    response = alice_client.post("/settings/keys/", {"name": "ci"}, follow=True)
    html = response.content.decode()
    key = ApiKey.objects.get(workspace=acme, name="ci")
    secret = html.split('id="new-secret">')[1].split("<")[0]
    assert ApiKey.authenticate(secret) == key
    assert secret not in alice_client.get("/settings/").content.decode()
    alice_client.post(f"/settings/keys/{key.prefix}/revoke/")
    assert ApiKey.authenticate(secret) is None


def test_member_cannot_manage_keys(acme, bob):
    from tests.support.clients import client_for

    client = client_for(bob)
    assert client.post("/settings/keys/", {"name": "x"}).status_code == 403
    assert not ApiKey.objects.filter(name="x").exists()
    assert "bob" in client.get("/settings/").content.decode()


def test_usage_page_shows_totals_by_model_and_source(alice_client, acme, umbrella):
    run = make_run(acme)
    ModelRequest.objects.create(
        workspace=acme, run=run, source="agent", model="claude-a", input_tokens=100, cost_usd="0.5"
    )
    ModelRequest.objects.create(
        workspace=acme, run=run, source="judge", model="claude-b", input_tokens=10, cost_usd="0.25"
    )
    ModelRequest.objects.create(workspace=umbrella, source="agent", model="claude-umbrella", cost_usd="9")
    html = alice_client.get("/usage/").content.decode()
    assert "$0.7500" in html
    assert "claude-a" in html and "claude-b" in html
    assert "claude-umbrella" not in html
    assert html.count("<rect ") == 2
