"""Launch knows the models from the Models API: unknown and retired ones are refused, deprecated ones warn, and a
run's effort and thinking mode are checked against its model."""

import json
import socket

import pytest
from django.test import override_settings

from agent_platform import llm
from agent_platform.errors import ServiceError
from runs.launch import launch_run
from runs.models import Event, Run
from runs.presets import ITEMS_SCHEMA as SCHEMA
from tests.support.factories import make_run


@pytest.fixture(autouse=True)
def fresh_profiles(messages_stub):
    llm.forget_profiles()
    yield
    llm.forget_profiles()


def launch(api, **body):
    body.setdefault("task", "List the products on the first page.")
    return api.post("/runs", body)


def error_of(response, status: int, type: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["type"] == type
    return error


def test_the_default_model_is_claude_sonnet_5_5(api):
    run = launch(api).json()

    assert (run["model"], run["effort"], run["thinking"]) == ("claude-sonnet-5-5", "", "")


def test_a_retired_model_is_refused_at_launch_through_the_api(api):
    error = error_of(launch(api, model="claude-3-opus-20240229"), 400, "invalid_request")

    assert error["message"].startswith("model: ")
    assert "retired" in error["message"]
    assert not Run.objects.exists()


def test_a_retired_model_is_refused_at_launch_through_the_form(alice_client):
    response = alice_client.post("/runs/new/", {"task": "List the products.", "model": "claude-3-opus-20240229"})

    assert response.status_code == 400
    assert "was retired" in response.content.decode()
    assert not Run.objects.exists()


def test_an_unknown_model_is_refused_naming_the_field(api):
    error = error_of(launch(api, model="claude-nonexistent-9"), 400, "invalid_request")

    assert error["message"].startswith("model: 'claude-nonexistent-9' is not a model")


def test_a_deprecated_model_is_launched_with_a_warning_event_and_a_badge(api, alice_client):
    response = launch(api, model="claude-sonnet-4-5")

    assert response.status_code == 201, response.content
    run = Run.objects.get(public_id=response.json()["id"])
    (warning,) = Event.objects.filter(run=run, type="model.deprecated")
    assert warning.payload["model"] == "claude-sonnet-4-5"
    assert warning.payload["retires_at"].startswith("2026-11-30")
    assert "deprecated" in warning.payload["message"]
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert 'id="model-deprecated"' in page and "retires 2026-11-30" in page
    listing = alice_client.get("/").content.decode()
    assert "Deprecated at launch; retires 2026-11-30" in listing


def test_an_active_model_has_no_warning(acme, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        run = launch_run(acme, task="Look around.", model="claude-opus-5-5").run

    assert not Event.objects.filter(run=run).exists()


def test_effort_and_thinking_are_stored_when_the_model_has_them(api):
    response = launch(api, model="claude-sonnet-5-5", effort="low", thinking="between_tools")

    assert response.status_code == 201, response.content
    assert (response.json()["effort"], response.json()["thinking"]) == ("low", "between_tools")
    run = Run.objects.get(public_id=response.json()["id"])
    assert (run.effort, run.thinking) == ("low", "between_tools")


@pytest.mark.parametrize(
    ("model", "field", "value"),
    [
        ("claude-haiku-5-5", "effort", "xhigh"),
        ("claude-haiku-4-5", "effort", "low"),
        ("claude-sonnet-5-5", "thinking", "disabled"),
        ("claude-opus-5-5", "thinking", "between_tools"),
        ("claude-sonnet-5-5", "thinking", "enabled"),
    ],
)
def test_an_effort_or_thinking_mode_the_model_lacks_is_refused_naming_the_field(api, model, field, value):
    error = error_of(launch(api, model=model, **{field: value}), 400, "invalid_request")

    assert error["message"].startswith(f"{field}: '{value}' is not")


def test_the_form_offers_the_active_models_and_takes_effort_and_thinking(alice_client):
    page = alice_client.get("/runs/new/").content.decode()

    assert '<select id="id_model" name="model">' in page
    assert 'value="claude-sonnet-5-5" selected' in page
    assert 'value="claude-fable-5-1"' in page
    assert "claude-3-opus-20240229" not in page and 'value="claude-sonnet-4-5"' not in page

    response = alice_client.post(
        "/runs/new/", {"task": "Look around.", "model": "claude-haiku-5-5", "effort": "medium", "thinking": "disabled"}
    )

    assert response.status_code == 302
    run = Run.objects.get()
    assert (run.model, run.effort, run.thinking) == ("claude-haiku-5-5", "medium", "disabled")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_launch_is_refused_as_unavailable_when_the_models_api_cannot_be_asked(api, alice_client):
    with override_settings(ANTHROPIC_BASE_URL=f"http://127.0.0.1:{closed_port()}"):
        error = error_of(launch(api), 503, "service_unavailable")
        page = alice_client.get("/runs/new/")

    assert error["message"].startswith("model: The Models API could not be asked")
    assert not Run.objects.exists()
    # The form still opens, with a text field for the model and the reason.
    assert '<input id="id_model" type="text"' in page.content.decode()
    assert "could not be asked" in page.content.decode()


def test_a_follow_up_cannot_bring_a_schema_to_a_session_created_without_one(api, acme):
    first = make_run(acme)

    error = error_of(launch(api, session_id=first.session.public_id, output_schema=SCHEMA), 409, "conflict")

    assert "has no output schema" in error["message"]
    first.session.refresh_from_db()
    assert first.session.output_schema is None
    assert Run.objects.count() == 1


def test_the_schema_lint_warns_of_the_conflict_on_a_schema_less_session(alice_client, acme):
    session = make_run(acme).session

    answer = alice_client.post(
        f"/runs/schema-lint/?session={session.public_id}", json.dumps(SCHEMA), content_type="application/json"
    ).json()

    assert answer["ok"] is False
    assert "has no output schema" in answer["conflict"]


def test_a_launch_error_names_the_model_field_for_the_form(acme):
    with pytest.raises(ServiceError) as raised:
        launch_run(acme, task="x", model="claude-3-opus-20240229")

    assert raised.value.field == "model"
