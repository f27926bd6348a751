"""Service errors are mapped once: every error class, raised by a service, is answered by the API's envelope with its
own code and status, and pages read the same status from the error."""

import json

import pytest
from django.db import OperationalError
from django.test import Client
from ninja.errors import HttpError

from agent_platform.api import on_http_error
from agent_platform.errors import ERROR_CLASSES, Conflict
from runs.launch import IdempotencyKeyReused
from tests.support.factories import make_run, make_session

pytestmark = pytest.mark.django_db

ALL_ERRORS = [*ERROR_CLASSES, IdempotencyKeyReused]
OTHER_SCHEMA = json.dumps({"type": "object", "properties": {"name": {"type": "string"}}})


def test_each_status_belongs_to_one_error_class():
    statuses = [error_class.status for error_class in ERROR_CLASSES]
    assert len(statuses) == len(set(statuses))


@pytest.mark.parametrize("error_class", ALL_ERRORS, ids=lambda error_class: error_class.__name__)
def test_a_service_error_is_answered_with_its_code_and_status(api, acme, monkeypatch, error_class):
    run = make_run(acme)

    def refuse(run):
        raise error_class("cancel: refused for the test.", detail={"why": "test"}, headers={"X-Refused": "yes"})

    monkeypatch.setattr("runs.api.request_cancel", refuse)
    response = api.post(f"/runs/{run.public_id}/cancel")

    assert response.status_code == error_class.status, response.content
    assert response.json() == {
        "error": {"type": error_class.code, "message": "cancel: refused for the test.", "detail": {"why": "test"}}
    }
    assert response["X-Refused"] == "yes"


def test_a_reused_idempotency_key_is_a_conflict_with_its_detail_code(api):
    api.post("/runs", {"task": "t"}, headers={"Idempotency-Key": "key-1"})
    response = api.post("/runs", {"task": "other"}, headers={"Idempotency-Key": "key-1"})

    assert issubclass(IdempotencyKeyReused, Conflict)
    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["type"], error["detail"]["code"]) == ("conflict", "idempotency_key_reused")


@pytest.mark.parametrize("error_class", ERROR_CLASSES, ids=lambda error_class: error_class.__name__)
def test_ninjas_own_http_errors_take_the_type_of_the_class_with_their_status(rf, error_class):
    response = on_http_error(rf.get("/api/v1/runs"), HttpError(error_class.status, "refused by ninja"))

    assert response.status_code == error_class.status
    assert response.content.decode() == (
        f'{{"error": {{"type": "{error_class.code}", "message": "refused by ninja", "detail": null}}}}'
    )


def test_an_http_error_of_a_status_no_class_has_is_an_invalid_request(rf):
    response = on_http_error(rf.get("/api/v1/runs"), HttpError(418, "I'm a teapot"))
    assert response.status_code == 418
    assert b'"type": "invalid_request"' in response.content


def test_the_launch_form_answers_with_the_status_of_the_error(alice_client, acme):
    session = make_session(acme, output_schema={"type": "object"})
    response = alice_client.post(
        "/runs/new/", {"task": "t", "session_id": session.public_id, "output_schema": OTHER_SCHEMA}
    )

    assert response.status_code == 409
    error = response.context["error"]
    assert isinstance(error, Conflict)
    # a sentence for a person, without the API's type in front of it
    assert f'id="launch-error">{error.message}<' in response.content.decode()
    assert b"conflict:" not in response.content and b"<strong>conflict</strong>" not in response.content


@pytest.mark.parametrize(
    ("failure", "status", "code"),
    [
        (OperationalError("connection to server at 127.0.0.1, port 5432 failed"), 503, "service_unavailable"),
        (RuntimeError("a bug"), 500, "server_error"),
    ],
    ids=["database away", "a bug"],
)
def test_whatever_fails_under_the_api_answers_the_envelope_not_an_html_page(
    acme_key, monkeypatch, failure, status, code
):
    def fail(token):
        raise failure

    monkeypatch.setattr("agent_platform.api.ApiKey.authenticate", fail)
    client = Client(raise_request_exception=False)
    response = client.get("/api/v1/runs", headers={"Authorization": f"Bearer {acme_key}"})

    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["type"] == code
    assert "5432" not in error["message"] and "bug" not in error["message"]  # what failed is logged, not told
    v4 = client.get("/api/v4/runs", headers={"X-Browser-Use-API-Key": acme_key})
    assert v4.status_code == status and set(v4.json()) == {"detail"}


def test_a_page_that_fails_keeps_djangos_own_error_page(alice_client, monkeypatch):
    monkeypatch.setattr("runs.views.demo_tasks", lambda workspace: 1 / 0)
    alice_client.raise_request_exception = False

    response = alice_client.get("/runs/new/")

    assert response.status_code == 500 and not response["Content-Type"].startswith("application/json")
