"""The launch service shared by the API and the launch form: validation, sessions and their schema, idempotency."""

import pytest

from agent_platform.errors import ServiceError
from judge.models import Outcome
from runs.launch import launch_run
from runs.launch_rules import schema_lint
from runs.models import Run, Session
from tests.support.factories import make_session

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def test_launch_creates_a_session_and_a_queued_run_with_defaults(acme, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        run = launch_run(acme, task="  Find the price of the red mug.  ", output_schema=SCHEMA).run
    assert run.status == Run.Status.QUEUED
    assert run.task == "Find the price of the red mug."
    assert run.max_turns == 30
    assert run.model == "claude-sonnet-5-5"
    assert run.session.output_schema == SCHEMA
    assert run.session.workspace == acme
    assert len(callbacks) == 1, "the run is enqueued once, on commit"


def test_the_default_of_max_turns_is_the_setting(acme, settings):
    settings.RUN_DEFAULT_MAX_TURNS = 12
    assert launch_run(acme, task="t").run.max_turns == 12
    assert launch_run(acme, task="t", max_turns=40).run.max_turns == 40


def test_launch_with_outcome_creates_the_outcome_in_the_same_transaction(acme):
    run = launch_run(acme, task="t", outcome={"description": "A report", "rubric": "- lists prices"}).run
    outcome = Outcome.objects.get(run=run)
    assert (outcome.description, outcome.max_iterations) == ("A report", 3)


def test_follow_up_inherits_the_session_schema(acme):
    first = launch_run(acme, task="t", output_schema=SCHEMA).run
    follow_up = launch_run(acme, task="next", session_id=first.session.public_id).run
    assert follow_up.session_id == first.session_id
    assert follow_up.session.output_schema == SCHEMA


def test_follow_up_with_other_schema_is_conflict_in_the_service(acme):
    first = launch_run(acme, task="t", output_schema=SCHEMA).run
    with pytest.raises(ServiceError) as caught:
        launch_run(acme, task="t", session_id=first.session.public_id, output_schema={"type": "object"})
    assert caught.value.code == "conflict"
    assert caught.value.field == "output_schema"
    assert Run.objects.count() == 1


def test_another_workspace_session_is_not_found_in_the_service(acme, umbrella):
    theirs = make_session(umbrella)
    with pytest.raises(ServiceError) as caught:
        launch_run(acme, task="t", session_id=theirs.public_id)
    assert caught.value.code == "not_found"


def test_a_refused_launch_creates_nothing(acme):
    with pytest.raises(ServiceError) as caught:
        launch_run(acme, task="t", output_schema={"type": "object", "properties": {"a": {"$ref": "#/x"}}})
    assert caught.value.code == "invalid_request"
    assert "$ref" in caught.value.message and "$.properties.a.$ref" in caught.value.message
    assert not Session.objects.exists() and not Run.objects.exists()


def test_idempotency_key_returns_the_same_run(acme):
    first = launch_run(acme, task="t", idempotency_key="abc-1")
    again = launch_run(acme, task="t", idempotency_key="abc-1")
    assert again.run.pk == first.run.pk and again.replayed and not first.replayed
    assert Run.objects.count() == 1


def test_schema_lint_reports_path_and_keyword():
    problems = schema_lint({"type": "object", "properties": {"email": {"type": "string", "format": "email"}}})
    assert problems == [{"path": "$.properties.email.format", "keyword": "format", "message": problems[0]["message"]}]
    assert schema_lint(SCHEMA) == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_launches_with_one_idempotency_key_create_one_run(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from django.db import connection

    from agent_platform.models import Workspace

    acme = Workspace.objects.create(name="Acme", slug="acme")
    start = Barrier(4)
    # The enqueue is recorded, not sent: a live session worker executing this run while the test database is
    # flushed would deadlock the flush, and what matters here is that the run is enqueued exactly once.
    enqueued = []
    monkeypatch.setattr("runs.lifecycle.enqueue", enqueued.append)

    def attempt(_):
        try:
            start.wait()
            return launch_run(acme, task="t", idempotency_key="race-1").run.public_id
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        ids = set(pool.map(attempt, range(4)))
    assert len(ids) == 1
    assert Run.objects.filter(idempotency_key="race-1").count() == 1
    assert enqueued == [Run.objects.get(idempotency_key="race-1").pk]
