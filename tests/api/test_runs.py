"""The runs API: launching with every launch rule, reading runs, their events and judgments, and sessions."""

import json

import pytest
from django.utils import timezone

from agent_platform.models import ModelRequest
from judge.models import Judgment, Outcome, OutcomeEvaluation
from runs.events import emit
from runs.models import Run, Session
from runs.presets import ITEMS_SCHEMA as SCHEMA
from tests.support.factories import make_run, make_session


def error_of(response, status: int, type: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["type"] == type
    return error


def launch(api, **body):
    body.setdefault("task", "List the products on the first page.")
    return api.post("/runs", body)


# --- POST /runs ----------------------------------------------------------------------------------------------------


def test_launch_returns_201_with_the_run(api, acme):
    response = launch(api, output_schema=SCHEMA, judge=True, metadata={"ticket": 7}, start_url="https://shop.test/")
    assert response.status_code == 201, response.content
    run = response.json()
    assert run["id"].startswith("run_") and run["session_id"].startswith("sess_")
    assert run["status"] == "queued"
    assert run["max_turns"] == 30
    assert run["judge"] is True
    assert run["output_schema"] == SCHEMA
    assert run["metadata"] == {"ticket": 7}
    assert run["usage"] == {"requests": 0, "total": 0, "output": 0, "cache_read": 0, "cache_write": 0, "cost_usd": "0"}
    assert run["error"] is None and run["judgment"] is None and run["outcome"] is None
    assert Run.objects.get(public_id=run["id"]).workspace == acme


def test_task_is_required(api):
    error = error_of(api.post("/runs", {}), 400, "invalid_request")
    assert "task" in error["message"]


def test_empty_task_is_refused(api):
    error = error_of(launch(api, task="   "), 400, "invalid_request")
    assert error["message"] == "task: is required and must not be empty"


def test_max_turns_above_200_is_refused(api):
    error = error_of(launch(api, max_turns=201), 400, "invalid_request")
    assert "max_turns" in error["message"]
    assert launch(api, max_turns=200).status_code == 201


def test_max_turns_of_zero_is_refused(api):
    assert "max_turns" in error_of(launch(api, max_turns=0), 400, "invalid_request")["message"]


def test_start_url_must_be_http(api):
    assert "start_url" in error_of(launch(api, start_url="file:///etc/passwd"), 400, "invalid_request")["message"]


def test_ref_keyword_is_refused_with_its_path(api):
    schema = {"type": "object", "properties": {"a": {"$ref": "#/definitions/a"}}}
    error = error_of(launch(api, output_schema=schema), 400, "invalid_request")
    assert "'$ref'" in error["message"] and "$.properties.a.$ref" in error["message"]
    assert error["detail"][0] == {
        "path": "$.properties.a.$ref",
        "keyword": "$ref",
        "message": error["detail"][0]["message"],
    }


@pytest.mark.parametrize("keyword, value", [("format", "email"), ("pattern", "^a")])
def test_format_and_pattern_are_refused_with_their_path(api, keyword, value):
    schema = {"type": "object", "properties": {"email": {"type": "string", keyword: value}}}
    error = error_of(launch(api, output_schema=schema), 400, "invalid_request")
    assert f"'{keyword}'" in error["message"] and f"$.properties.email.{keyword}" in error["message"]


def test_unlisted_keyword_is_refused(api):
    error = error_of(launch(api, output_schema={"type": "object", "minProperties": 1}), 400, "invalid_request")
    assert "minProperties" in error["message"] and "$.minProperties" in error["message"]


def test_schema_root_must_be_an_object(api):
    error = error_of(launch(api, output_schema={"type": "array", "items": {"type": "string"}}), 400, "invalid_request")
    assert "root must be an object" in error["message"]


def test_schema_over_8_kib_is_refused(api):
    properties = {f"field_{i}": {"type": "string", "description": "x" * 80} for i in range(100)}
    error = error_of(launch(api, output_schema={"type": "object", "properties": properties}), 400, "invalid_request")
    assert "8192" in error["message"]


def test_schema_that_is_not_valid_json_schema_is_refused(api):
    error = error_of(launch(api, output_schema={"type": "object", "required": "name"}), 400, "invalid_request")
    assert "not a valid JSON Schema" in error["message"]


def test_every_supported_keyword_is_accepted(api):
    schema = {
        "type": "object",
        "title": "Shop",
        "description": "What the shop lists",
        "properties": {
            "kind": {"enum": ["a", "b"]},
            "version": {"const": 1},
            "price": {"type": "number", "minimum": 0, "maximum": 1000},
            "name": {"type": "string", "minLength": 1, "maxLength": 80},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 0, "maxItems": 5},
            "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "one": {"oneOf": [{"type": "integer"}, {"type": "boolean"}]},
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    assert launch(api, output_schema=schema).status_code == 201


def test_follow_up_inherits_the_session_schema(api):
    first = launch(api, output_schema=SCHEMA).json()
    follow_up = launch(api, session_id=first["session_id"]).json()
    assert follow_up["session_id"] == first["session_id"]
    assert follow_up["output_schema"] == SCHEMA


def test_follow_up_with_other_schema_is_conflict(api):
    first = launch(api, output_schema=SCHEMA).json()
    other = {"type": "object", "properties": {"title": {"type": "string"}}}
    error = error_of(launch(api, session_id=first["session_id"], output_schema=other), 409, "conflict")
    assert "output_schema" in error["message"]
    assert Run.objects.count() == 1


def test_follow_up_naming_the_same_schema_is_fine(api):
    first = launch(api, output_schema=SCHEMA).json()
    # Key order differs: the comparison is of the JSON value, not its spelling.
    same = json.loads(json.dumps(SCHEMA, sort_keys=True))
    response = launch(api, session_id=first["session_id"], output_schema=same)
    assert response.status_code == 201, response.content


def test_judge_context_of_nine_statements_is_refused(api):
    error = error_of(launch(api, judge=True, judge_context=["ok"] * 9), 400, "invalid_request")
    assert error["message"] == "judge_context: has 9 statements; at most 8 are allowed"


def test_judge_context_statement_over_500_characters_is_refused(api):
    error = error_of(launch(api, judge=True, judge_context=["ok", "x" * 501]), 400, "invalid_request")
    assert error["message"] == "judge_context[1]: is 501 characters; the limit is 500"
    assert launch(api, judge=True, judge_context=["x" * 500] * 8).status_code == 201


@pytest.mark.parametrize("iterations", [0, 21])
def test_outcome_max_iterations_outside_1_to_20_is_refused(api, iterations):
    outcome = {"description": "A report", "rubric": "- lists prices", "max_iterations": iterations}
    error = error_of(launch(api, outcome=outcome), 400, "invalid_request")
    assert "outcome.max_iterations" in error["message"]


def test_outcome_is_created_with_the_run(api):
    outcome = {"description": "A report", "rubric": "- lists prices", "max_iterations": 20}
    run = launch(api, outcome=outcome).json()
    assert run["outcome"]["max_iterations"] == 20 and run["outcome"]["evaluations"] == []
    assert Outcome.objects.get(public_id=run["outcome"]["id"]).run.public_id == run["id"]


def test_unknown_field_is_refused_naming_it(api):
    error = error_of(launch(api, temperature=0.2), 400, "invalid_request")
    assert "temperature" in error["message"]


def test_unknown_outcome_field_is_refused_naming_it(api):
    error = error_of(launch(api, outcome={"description": "d", "rubric": "r", "grader": "x"}), 400, "invalid_request")
    assert "outcome.grader" in error["message"]


@pytest.mark.parametrize(
    "field, value",
    [("max_turns", "30"), ("judge", "yes"), ("task", 42), ("judge_context", "be strict"), ("metadata", [1])],
)
def test_wrong_type_is_refused_naming_the_field(api, field, value):
    error = error_of(launch(api, **{field: value}), 400, "invalid_request")
    assert field in error["message"]


def test_malformed_json_is_invalid_request(api):
    error = error_of(api.post("/runs", raw='{"task": "x",'), 400, "invalid_request")
    assert "not valid JSON" in error["message"]


def test_nul_characters_are_invalid_request(api):
    error = error_of(api.post("/runs", raw='{"task": "a\\u0000b"}'), 400, "invalid_request")
    assert "NUL" in error["message"]


def test_nan_is_invalid_request(api):
    error_of(api.post("/runs", raw='{"task": "t", "metadata": {"x": NaN}}'), 400, "invalid_request")


def test_oversized_body_is_refused_before_parsing(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    # Not even JSON: the size alone refuses it, so the body is never parsed.
    error = error_of(api.post("/runs", raw="x" * 5000), 413, "invalid_request")
    assert "4096" in error["message"]


def test_metadata_over_16_kib_is_refused(api):
    assert "metadata" in error_of(launch(api, metadata={"x": "y" * 17000}), 400, "invalid_request")["message"]


def test_allowed_domains_must_be_host_names(api):
    error = error_of(launch(api, allowed_domains=["shop.test", "http://x/"]), 400, "invalid_request")
    assert "allowed_domains[1]" in error["message"]


def test_idempotency_key_returns_the_same_run(api):
    headers = {"Idempotency-Key": "launch-42"}
    first = api.post("/runs", {"task": "t"}, headers=headers)
    again = api.post("/runs", {"task": "t"}, headers=headers)
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"]
    assert "Idempotent-Replayed" not in first.headers and again.headers["Idempotent-Replayed"] == "true"
    assert Run.objects.count() == 1


def test_idempotency_keys_are_per_workspace(api, umbrella_api):
    headers = {"Idempotency-Key": "shared-key"}
    ours = api.post("/runs", {"task": "t"}, headers=headers).json()
    theirs = umbrella_api.post("/runs", {"task": "t"}, headers=headers).json()
    assert ours["id"] != theirs["id"]


def test_unauthenticated_launch_is_401(db):
    from tests.support.clients import ApiClient

    error = error_of(ApiClient(None).post("/runs", {"task": "t"}), 401, "authentication_error")
    assert "API key" in error["message"]


def test_launch_enqueues_execution_on_commit(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        launch(api)
    assert len(callbacks) == 1


# --- another workspace's objects -----------------------------------------------------------------------------------


def test_charlie_gets_404_for_acme_run(acme, umbrella_api):
    run = make_run(acme)
    for path in (f"/runs/{run.public_id}", f"/runs/{run.public_id}/events", f"/runs/{run.public_id}/judgments"):
        error_of(umbrella_api.get(path), 404, "not_found")
    error_of(umbrella_api.post(f"/runs/{run.public_id}/cancel"), 404, "not_found")
    error_of(umbrella_api.post(f"/runs/{run.public_id}/rejudge", {}), 404, "not_found")
    run.refresh_from_db()
    assert run.cancel_requested_at is None


def test_charlie_gets_404_for_acme_session(acme, umbrella_api):
    session = make_session(acme)
    error_of(umbrella_api.get(f"/sessions/{session.public_id}"), 404, "not_found")


def test_charlie_cannot_follow_up_in_acme_session(acme, umbrella_api):
    session = make_session(acme, output_schema=SCHEMA)
    error_of(umbrella_api.post("/runs", {"task": "t", "session_id": session.public_id}), 404, "not_found")
    assert session.runs.count() == 0


def test_charlie_lists_none_of_acme_runs_or_sessions(acme, umbrella_api):
    make_run(acme)
    assert umbrella_api.get("/runs").json()["runs"] == []
    assert umbrella_api.get("/sessions").json()["sessions"] == []


def test_charlie_sees_none_of_acme_usage(acme, umbrella_api):
    ModelRequest.objects.create(workspace=acme, source="agent", model="m", input_tokens=5)
    assert umbrella_api.get("/usage").json()["totals"]["requests"] == 0


def test_malformed_ids_are_404(api):
    error_of(api.get("/runs/run_%00"), 404, "not_found")
    error_of(api.get("/sessions/nope"), 404, "not_found")


# --- GET /runs -----------------------------------------------------------------------------------------------------


def test_runs_are_paginated_by_cursor_without_gaps_or_duplicates(api, acme):
    session = make_session(acme)
    now = timezone.now()
    created = [make_run(acme, session, created_at=now) for _ in range(3)]  # same instant: the id breaks the tie
    created += [make_run(acme, session, created_at=now - timezone.timedelta(minutes=i)) for i in range(1, 4)]
    seen, cursor = [], None
    while True:
        page = api.get("/runs?limit=2" + (f"&cursor={cursor}" if cursor else "")).json()
        seen += [run["id"] for run in page["runs"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            break
        cursor = page["next_cursor"]
    assert sorted(seen) == sorted(run.public_id for run in created)
    assert len(seen) == len(set(seen)) == 6


def test_a_forged_cursor_is_invalid_request(api):
    error = error_of(api.get("/runs?cursor=not-a-cursor"), 400, "invalid_request")
    assert "cursor" in error["message"]


def test_runs_filter_by_status_and_session(api, acme):
    session = make_session(acme)
    done = make_run(acme, session, status=Run.Status.SUCCEEDED)
    make_run(acme, status=Run.Status.SUCCEEDED)
    make_run(acme, session)
    page = api.get(f"/runs?status=succeeded&session_id={session.public_id}").json()
    assert [run["id"] for run in page["runs"]] == [done.public_id]
    error_of(api.get("/runs?status=exploded"), 400, "invalid_request")


def test_runs_filter_by_the_latest_judgment_verdict(api, acme):
    passed_later, failed_later = make_run(acme), make_run(acme)
    earlier, later = timezone.now() - timezone.timedelta(hours=1), timezone.now()
    Judgment.objects.create(run=passed_later, verdict="fail", reason="r", judged_at=earlier)
    Judgment.objects.create(run=passed_later, verdict="pass", reason="r", judged_at=later)
    Judgment.objects.create(run=failed_later, verdict="pass", reason="r", judged_at=earlier)
    Judgment.objects.create(run=failed_later, verdict="fail", reason="r", judged_at=later)
    assert [r["id"] for r in api.get("/runs?verdict=pass").json()["runs"]] == [passed_later.public_id]
    assert [r["id"] for r in api.get("/runs?verdict=fail").json()["runs"]] == [failed_later.public_id]


def test_runs_filter_by_creation_time(api, acme):
    old = make_run(acme, created_at=timezone.now() - timezone.timedelta(days=3))
    new = make_run(acme)
    cut = (timezone.now() - timezone.timedelta(days=1)).isoformat().replace("+00:00", "Z")
    assert [r["id"] for r in api.get(f"/runs?created_after={cut}").json()["runs"]] == [new.public_id]
    assert [r["id"] for r in api.get(f"/runs?created_before={cut}").json()["runs"]] == [old.public_id]


# --- GET /runs/{id} ------------------------------------------------------------------------------------------------


def test_a_finished_run_shows_its_data_error_judgment_and_outcome(api, acme):
    session = make_session(acme, output_schema=SCHEMA)
    run = make_run(
        acme,
        session,
        status=Run.Status.FAILED,
        success=False,
        output="The shop was closed.",
        data={"items": []},
        error_code="task_failed",
        error_message="The agent reported failure.",
        signals={"turns": 3, "max_turns": 30, "verdict_turn": "none"},
        usage_requests=2,
        usage_input=100,
        usage_output=20,
        cost_usd="0.00123400",
    )
    Judgment.objects.create(
        run=run, verdict="uncertain", reason="old", judged_at=timezone.now() - timezone.timedelta(1)
    )
    Judgment.objects.create(run=run, verdict="fail", reason="The shop was open.", blocked=False)
    outcome = Outcome.objects.create(run=run, description="d", rubric="r")
    OutcomeEvaluation.objects.create(
        outcome=outcome, iteration=0, result="needs_revision", explanation="e", output_tokens=9
    )
    body = api.get(f"/runs/{run.public_id}").json()
    assert body["output_schema"] == SCHEMA
    assert body["data"] == {"items": []} and body["success"] is False
    assert body["error"] == {"code": "task_failed", "message": "The agent reported failure."}
    assert body["signals"]["verdict_turn"] == "none"
    assert body["usage"] == {
        "requests": 2,
        "total": 120,
        "output": 20,
        "cache_read": 0,
        "cache_write": 0,
        "cost_usd": "0.001234",
    }
    assert body["judgment"]["verdict"] == "fail" and body["judgment"]["reason"] == "The shop was open."
    evaluation = body["outcome"]["evaluations"][0]
    assert evaluation["result"] == "needs_revision" and evaluation["usage"]["output_tokens"] == 9


# --- cancel, rejudge -------------------------------------------------------------------------------------------------


def test_cancel_is_idempotent(api, acme):
    run = make_run(acme)
    first = api.post(f"/runs/{run.public_id}/cancel")
    again = api.post(f"/runs/{run.public_id}/cancel")
    assert first.status_code == again.status_code == 200
    assert first.json()["status"] == again.json()["status"] == "cancelled"
    assert again.json()["error"]["code"] == "cancelled"
    assert run.events.filter(type="run.finished").count() == 1


def test_cancel_of_a_finished_run_leaves_it_as_it_was(api, acme):
    run = make_run(acme, status=Run.Status.SUCCEEDED, success=True)
    assert api.post(f"/runs/{run.public_id}/cancel").json()["status"] == "succeeded"


def test_rejudge_of_an_unfinished_run_is_conflict(api, acme):
    run = make_run(acme)
    error_of(api.post(f"/runs/{run.public_id}/rejudge", {}), 409, "conflict")


def test_rejudge_refuses_too_many_statements(api, acme):
    run = make_run(acme, status=Run.Status.SUCCEEDED)
    error = error_of(api.post(f"/runs/{run.public_id}/rejudge", {"judge_context": ["a"] * 9}), 400, "invalid_request")
    assert "judge_context" in error["message"]


def test_rejudge_refuses_unknown_fields(api, acme):
    run = make_run(acme, status=Run.Status.SUCCEEDED)
    error = error_of(api.post(f"/runs/{run.public_id}/rejudge", {"verdict": "pass"}), 400, "invalid_request")
    assert "verdict" in error["message"]


# --- events and judgments --------------------------------------------------------------------------------------------


def test_events_page_by_seq(api, acme):
    run = make_run(acme)
    for index in range(5):
        emit(run, "agent.message", {"text": f"turn {index}"})
    first = api.get(f"/runs/{run.public_id}/events?limit=3").json()
    assert [event["seq"] for event in first["events"]] == [1, 2, 3]
    assert first["has_more"] is True and first["next_after"] == 3
    assert set(first["events"][0]) == {"id", "seq", "type", "data", "processed_at"}
    rest = api.get(f"/runs/{run.public_id}/events?after={first['next_after']}&limit=3").json()
    assert [event["data"]["text"] for event in rest["events"]] == ["turn 3", "turn 4"]
    assert rest["has_more"] is False and rest["next_after"] == 5
    empty = api.get(f"/runs/{run.public_id}/events?after=5").json()
    assert empty == {"events": [], "next_after": 5, "has_more": False}


def test_events_limit_is_bounded(api, acme):
    run = make_run(acme)
    error_of(api.get(f"/runs/{run.public_id}/events?limit=100000"), 400, "invalid_request")
    error_of(api.get(f"/runs/{run.public_id}/events?after=-1"), 400, "invalid_request")


def test_judgments_latest_first(api, acme):
    run = make_run(acme, status=Run.Status.SUCCEEDED)
    Judgment.objects.create(run=run, verdict="fail", reason="first", judged_at=timezone.now() - timezone.timedelta(1))
    Judgment.objects.create(run=run, verdict="pass", reason="second", judge_context=["prices in EUR"])
    judgments = api.get(f"/runs/{run.public_id}/judgments").json()["judgments"]
    assert [j["reason"] for j in judgments] == ["second", "first"]
    assert judgments[0]["judge_context"] == ["prices in EUR"]


# --- sessions --------------------------------------------------------------------------------------------------------


def test_session_shows_its_schema_and_runs_in_order(api):
    first = launch(api, output_schema=SCHEMA, task="first").json()
    second = launch(api, session_id=first["session_id"], task="second").json()
    session = api.get(f"/sessions/{first['session_id']}").json()
    assert session["output_schema"] == SCHEMA
    assert [run["id"] for run in session["runs"]] == [first["id"], second["id"]]
    listed = api.get("/sessions").json()
    assert listed["sessions"][0]["id"] == first["session_id"] and listed["sessions"][0]["run_count"] == 2
    assert Session.objects.count() == 1


def test_rejudge_queues_a_judgment_with_the_edited_context(api, acme, django_capture_on_commit_callbacks):
    run = make_run(acme, status=Run.Status.SUCCEEDED, judge=True, judge_context=["old"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api.post(f"/runs/{run.public_id}/rejudge", {"judge_context": ["Prices are in EUR."]})
    assert response.status_code == 202, response.content
    assert response.json()["id"] == run.public_id
    assert len(callbacks) == 1, "one judge task is queued on commit"


def test_an_offset_postgresql_refuses_is_read_as_its_utc_instant(api, acme):
    # Found by the fuzzer: PostgreSQL refuses offsets beyond 15:59, so the API compares in UTC.
    make_run(acme)
    response = api.get("/runs?created_before=0716-06-09T21:17:52-18:25")
    assert response.status_code == 200 and response.json()["runs"] == []


def test_times_beyond_what_the_server_holds_are_read_as_the_earliest_and_latest_instants(api, acme):
    """Valid RFC 3339 (the document's format) but before year 1 or after year 9999 in UTC: as a bound they mean from
    the start or to the end, not a refusal of what the document allows."""
    run = make_run(acme)
    ids_after_year_1 = [r["id"] for r in api.get("/runs?created_after=0001-01-01T00:00:00%2B14:00").json()["runs"]]
    ids_before_9999 = [r["id"] for r in api.get("/runs?created_before=9999-12-31T23:59:59-14:00").json()["runs"]]
    assert ids_after_year_1 == ids_before_9999 == [run.public_id]
    assert api.get("/runs?created_after=9999-12-31T23:59:59-14:00").json()["runs"] == []
