"""The API's edges answer the error envelope, never Django's HTML or a Python message: bodies not sent as JSON, JSON
nested too deeply or naming a member twice, a method a path does not take, and Redis away."""

import json

import pytest
from django.test import Client
from redis.exceptions import ConnectionError as RedisConnectionError

from agent_platform.api import JSON_MAX_DEPTH
from runs.models import Run
from tests.support.clients import ApiClient
from tests.support.factories import make_run
from tests.support.sites import free_port

pytestmark = pytest.mark.django_db


def error_of(response) -> dict:
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return response.json()["error"]


def test_a_body_nested_five_thousand_deep_is_refused_naming_the_limit(api):
    response = api.post("/runs", raw='{"task": "t", "output_schema": ' + "[" * 5000 + "]" * 5000 + "}")

    assert response.status_code == 400
    error = error_of(response)
    assert error["message"] == f"Invalid request body: arrays and objects nest deeper than {JSON_MAX_DEPTH} levels."
    assert "recursion" not in error["message"]
    assert not Run.objects.exists()


def test_a_body_just_past_the_depth_limit_is_refused_and_one_within_it_is_read(api):
    nested = {"task": "t", "metadata": json.loads("[" * (JSON_MAX_DEPTH - 1) + "]" * (JSON_MAX_DEPTH - 1))}
    too_deep = {"task": "t", "metadata": json.loads("[" * JSON_MAX_DEPTH + "]" * JSON_MAX_DEPTH)}

    assert "nest deeper" in error_of(api.post("/runs", too_deep))["message"]
    # within the limit the body is parsed, and the launch's own validation speaks about the field it does not take
    assert "nest deeper" not in error_of(api.post("/runs", nested))["message"]


def test_a_member_named_twice_is_refused_rather_than_the_last_one_kept(api):
    response = api.post("/runs", raw='{"task": "buy the cheap one", "task": "buy everything"}')

    assert response.status_code == 400
    assert error_of(response)["message"] == 'Invalid request body: the member "task" appears twice in an object.'
    assert not Run.objects.exists()


@pytest.mark.parametrize(
    ("raw", "message", "detail"),
    [
        (
            '{"task": "t",}',
            "Invalid request body: not valid JSON at line 1, column 14: expecting property name enclosed in double quotes.",
            {"line": 1, "column": 14},
        ),
        (
            '{"task":\n nope}',
            "Invalid request body: not valid JSON at line 2, column 2: expecting value.",
            {"line": 2, "column": 2},
        ),
        (
            b'{"task": "caf\xe9"}',
            "Invalid request body: not UTF-8 text (byte 13 cannot start or continue a character).",
            {"position": 13},
        ),
        (
            '["a list"]',
            "Invalid request: (body): must be a JSON object",
            [{"field": "(body)", "message": "must be a JSON object"}],
        ),
    ],
)
def test_a_body_that_is_not_a_json_object_says_where_without_python_words(api, raw, message, detail):
    response = api.client.post("/api/v1/runs", data=raw, content_type="application/json", headers=api.headers)

    error = error_of(response)
    assert response.status_code == 400
    assert (error["type"], error["message"], error["detail"]) == ("invalid_request", message, detail)
    assert "codec" not in message and "char " not in message


def test_an_operation_that_takes_a_body_names_its_required_field_when_none_is_sent(api, acme):
    run = make_run(acme)

    response = api.client.post(
        f"/api/v1/runs/{run.public_id}/messages", data="", content_type="application/json", headers=api.headers
    )

    error = error_of(response)
    assert response.status_code == 400

    assert error["message"] == "Invalid request: text: Field required"


def test_an_empty_post_to_an_operation_whose_fields_are_all_optional_is_an_empty_object(api, acme):
    running = make_run(acme)  # not succeeded: a recipe is refused for that, after the body was read as {}

    for content_type in ("application/json", ""):  # what `curl -X POST` sends carries no type
        response = api.client.post(
            f"/api/v1/runs/{running.public_id}/recipe", data="", content_type=content_type, headers=api.headers
        )
        assert response.status_code == 409, response.content
        assert error_of(response)["type"] == "conflict"


def test_a_wrong_method_or_path_on_v4_is_answered_as_v4_errors_are(acme_key):
    client = Client(headers={"X-Browser-Use-API-Key": acme_key})

    wrong_method = client.put("/api/v4/runs")
    assert wrong_method.status_code == 405 and wrong_method["Content-Type"] == "application/json"
    allowed = wrong_method["Allow"]
    assert {method.strip() for method in allowed.split(",")} == {"GET", "POST"}
    assert wrong_method.json() == {"detail": f"PUT is not allowed on /api/v4/runs; allowed: {allowed}."}

    no_path = client.get("/api/v4/nothing-here")
    assert no_path.status_code == 404
    assert no_path.json() == {"detail": "GET /api/v4/nothing-here is not a path of Pilothouse's v4 API."}


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_a_body_not_sent_as_json_is_unsupported_media(api, content_type):
    response = api.client.post(
        "/api/v1/runs", data=json.dumps({"task": "t"}), content_type=content_type, headers=api.headers
    )

    assert response.status_code == 415
    error = error_of(response)
    assert error["type"] == "unsupported_media_type"
    assert error["message"].startswith("The request body must be sent as application/json")
    assert not Run.objects.exists()


def test_a_json_media_type_with_parameters_or_a_suffix_is_json(api):
    for content_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        response = api.client.post(
            "/api/v1/runs", data=json.dumps({"task": "t"}), content_type=content_type, headers=api.headers
        )
        assert response.status_code == 201, (content_type, response.content)


def test_a_method_the_path_does_not_take_is_405_in_the_envelope_with_allow(api, acme):
    run = make_run(acme)

    response = api.client.delete(f"/api/v1/runs/{run.public_id}", headers=api.headers)

    assert response.status_code == 405
    error = error_of(response)
    assert error["type"] == "invalid_request"
    assert error["detail"] == {"allowed": ["GET"]}
    assert response["Allow"] == "GET"


def test_the_rate_limit_fails_open_while_the_cache_is_unreachable(api, acme, settings):
    """A closed port stands for a Redis that is restarting: the key is still checked in the database, the limit is
    skipped (agent_platform.api.KeyRateThrottle says why), and nothing answers 500."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
        }
    }
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    make_run(acme)

    answers = [api.get("/runs") for _ in range(3)]

    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert ApiClient("not-a-key").get("/runs").status_code == 401


def test_redis_unreachable_under_a_service_is_503_with_retry_after(api, acme, monkeypatch):
    run = make_run(acme)

    def broker_gone(run):
        raise RedisConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr("runs.api.request_cancel", broker_gone)
    response = api.post(f"/runs/{run.public_id}/cancel")

    assert response.status_code == 503
    error = error_of(response)
    assert error["type"] == "service_unavailable"
    assert "127.0.0.1" not in error["message"]
    assert response["Retry-After"] == "2"


@pytest.mark.parametrize("path", ["/api/v1/nothing", "/api/v1/runs/run_abc/nothing", "/api/v1/runs/"])
def test_a_path_the_api_does_not_have_is_404_in_the_envelope(api, path):
    response = api.client.get(path, headers=api.headers)

    assert response.status_code == 404
    error = error_of(response)
    assert error["type"] == "not_found"
    assert error["message"].startswith("No operation at /api/v1/")
