"""The API fuzzed from its own OpenAPI document: no input gets a 5xx, every answer matches the document, what the
document calls invalid is refused and, where the document can say everything the API checks, what it calls valid is
accepted."""

import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.config._auth import AuthConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from runs.models import Run
from runs.recipes.models import Recipe, RecipeVersion
from tests.support.factories import make_run

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
# Operations whose valid-by-the-document input may still be refused, because what decides it is not a shape: the
# launch's model, effort and thinking (the Models API says what a model takes), URLs whose host must be public or
# allowed (start_url, proxies, webhooks), a cron line's fields, a pending input's id, a multipart part the document
# cannot require. Every other operation must accept whatever the document allows.
ACCEPTANCE_NOT_CHECKED = {
    "POST /api/v1/runs",
    "POST /api/v1/runs/{run_id}/input",
    "POST /api/v1/files",
    "POST /api/v1/proxies",
    "POST /api/v1/batches",
    "POST /api/v1/webhooks/endpoints",
    "POST /api/v1/schedules",
    "PATCH /api/v1/schedules/{schedule_id}",
    # a recipe's steps decide: a run with no replayable action, a value no step typed, a parameter it does not have
    "POST /api/v1/runs/{run_id}/recipe",
    "PATCH /api/v1/recipes/{recipe_id}",
    # a file's text decides: a suite or a labels file is read line by line, and its lines name the fields it lacks
    "POST /api/v1/suites",
    "POST /api/v1/labels",
    # a suite's tasks and models decide, as a batch's do
    "POST /api/v1/suites/{suite_id}/batches",
    # the workspace's profiles and proxies decide, as a run's launch does
    "POST /api/v1/browsers",
}
EXAMPLES_PER_OPERATION_AND_MODE = 25


@pytest.fixture
def api_schema(db, settings):
    # The fuzzer sends hundreds of requests a minute; the per-key rate limit is tested elsewhere.
    settings.API_RATE_LIMIT_PER_MINUTE = 1_000_000
    # As Django's test client does: the WSGI app must not close the test's database connection after a request.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def checks_for(operation: str) -> list:
    """Every check, and that valid input is accepted unless the operation is one the document cannot say all of."""
    return CHECKS if operation in ACCEPTANCE_NOT_CHECKED else [*CHECKS, positive_data_acceptance]


def test_openapi_document_validates(client):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    validate(document)
    paths = set(document["paths"])
    assert {"/api/v1/runs", "/api/v1/runs/{run_id}/events", "/api/v1/sessions/{session_id}", "/api/v1/usage"} <= paths


@pytest.mark.slow  # hundreds of generated requests per operation: a minute or more
def test_no_input_gets_a_server_error(api_schema, acme, acme_key):
    # Real rows, so the read paths past the 404 are exercised too: generated ids are replaced by these now and then.
    finished = make_run(acme, status=Run.Status.SUCCEEDED)
    recipe = Recipe.objects.create(workspace=acme, name="Contact", task="Send it as {{name}}.", source_run=finished)
    RecipeVersion.objects.create(
        recipe=recipe, number=1, steps=[{"action": "navigate", "value": "https://shop.example.com/"}],
        parameters=[{"name": "name", "default": "Ada"}],
    )  # fmt: skip
    known_ids = {
        "run_id": finished.public_id,
        "session_id": finished.session.public_id,
        "recipe_id": recipe.public_id,
    }
    # Through schemathesis' own auth, so it knows the key is not part of a negative case.
    api_schema.config.auth = AuthConfig(openapi={"ApiKeyAuth": {"bearer": acme_key}})
    # Every string the API stores refuses NUL (docs/api.md); the document does not repeat it on each string.
    api_schema.config.generation.update(allow_x00=False)
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=EXAMPLES_PER_OPERATION_AND_MODE,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
                # CI replays one fixed set of examples so a landing is never decided by chance; locally each run
                # explores new inputs.
                derandomize=bool(os.environ.get("CI")),
            )
            def call(case):
                # Only a valid case may have its id swapped for a real one: in an invalid one the id may be what
                # makes it invalid, and the swap would make it valid.
                swap_ids = case.meta.generation.mode.is_positive
                for name, value in (case.path_parameters or {}).items():
                    if swap_ids and name in known_ids and isinstance(value, str) and len(value) % 3 == 0:
                        case.path_parameters[name] = known_ids[name]
                case.call_and_validate(checks=checks_for(case.operation.label))

            call()
