"""The OpenAPI document says what the API accepts, and the API takes exactly that: date-times as RFC 3339, cursors of
the documented shape, ids of their documented shape, text that is more than white space."""

import itertools
import re
import urllib.parse
import uuid

import pytest

from agent_platform import ids
from agent_platform.api import NOT_BLANK, PATTERN_MEANINGS
from agent_platform.errors import InvalidRequest
from agent_platform.ids import public_id_pattern
from agent_platform.lib.text import WHITE_SPACE
from agent_platform.names import clean_name, name_pattern
from browsers.models import PUBLIC_PREFIX as BROWSER_PREFIX
from evals.models import batch_id, suite_id
from runs.files import file_id
from runs.models import Run
from runs.profiles.models import profile_id
from runs.reading import CURSOR_PATTERN
from runs.recipes.models import recipe_id
from schedules.models import schedule_id
from tests.support.factories import make_run
from webhooks.models import delivery_id, endpoint_id

pytestmark = pytest.mark.django_db


def get(api, path: str, query: dict[str, str]):
    return api.get(f"{path}?{urllib.parse.urlencode(query)}")


def error_of(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    return response.json()["error"]


@pytest.fixture
def document(client) -> dict:
    return client.get("/api/v1/openapi.json").json()


def query_schema(document: dict, path: str, name: str) -> dict:
    parameters = document["paths"][f"/api/v1{path}"]["get"]["parameters"]
    schema = next(parameter["schema"] for parameter in parameters if parameter["name"] == name)
    return next((option for option in schema.get("anyOf", [schema]) if option.get("type") == "string"), schema)


@pytest.mark.parametrize("value", ["0.5", "1733212345", "2026-12-03", "2026-12-03T09:00:00", "2026-02-30T00:00:00Z"])
def test_a_date_time_query_that_is_not_rfc_3339_is_refused_naming_the_parameter(api, value):
    error = error_of(get(api, "/usage", {"to": value}), 400)

    assert error["type"] == "invalid_request"
    assert error["message"].startswith("Invalid request: to: ")


def test_an_rfc_3339_date_time_with_any_offset_is_read_as_its_utc_instant(api, acme):
    run = make_run(acme)
    before = run.created_at.astimezone().isoformat()  # the machine's offset, written out
    assert get(api, "/runs", {"created_before": before}).json()["runs"] == []
    for value in ("2000-01-01T00:00:00Z", "2000-01-01t05:30:00.123456+05:30", "1999-12-31T23:59:60Z"):
        assert [r["id"] for r in get(api, "/runs", {"created_after": value}).json()["runs"]] == [run.public_id]


def test_the_document_says_date_time_where_the_api_reads_one(document):
    for path, name in (("/usage", "from"), ("/usage", "to"), ("/runs", "created_after"), ("/runs", "created_before")):
        assert query_schema(document, path, name)["format"] == "date-time"


def test_every_cursor_of_the_documented_shape_is_a_position(api, acme, document):
    older, newer = make_run(acme), make_run(acme)
    assert query_schema(document, "/runs", "cursor")["pattern"] == CURSOR_PATTERN

    first = get(api, "/runs", {"limit": 1}).json()
    assert re.fullmatch(CURSOR_PATTERN, first["next_cursor"])
    assert [r["id"] for r in first["runs"]] == [newer.public_id]
    assert [r["id"] for r in get(api, "/runs", {"cursor": first["next_cursor"]}).json()["runs"]] == [older.public_id]
    # Never issued, same shape: a position all the same (before 1970 nothing, far ahead everything).
    assert get(api, "/runs", {"cursor": "0.0"}).json()["runs"] == []
    assert len(get(api, "/runs", {"cursor": "9999999999999999.1"}).json()["runs"]) == 2


@pytest.mark.parametrize("cursor", ["not-a-cursor", "eyJhIjogMX0", "1.2.3", "-1.5", "12345678901234567.1"])
def test_a_cursor_of_another_shape_is_refused(api, cursor):
    error = error_of(get(api, "/runs", {"cursor": cursor}), 400)
    assert error["message"] == f"Invalid request: cursor: {PATTERN_MEANINGS[CURSOR_PATTERN]}"
    assert PATTERN_MEANINGS[CURSOR_PATTERN] == "not a cursor this API returned."


def test_a_session_filter_takes_exactly_the_documented_id_shape(api, acme, document):
    run = make_run(acme)
    assert query_schema(document, "/runs", "session_id")["pattern"] == public_id_pattern("sess")

    assert [r["id"] for r in get(api, "/runs", {"session_id": run.session.public_id}).json()["runs"]] == [run.public_id]
    assert get(api, "/runs", {"session_id": "sess_" + "0" * 24}).json()["runs"] == []
    for malformed in ("nope", run.public_id, "sess_" + "0" * 23, "SESS_" + "0" * 24):
        assert "session_id" in error_of(get(api, "/runs", {"session_id": malformed}), 400)["message"]


def test_blank_text_is_invalid_by_the_document_and_refused_by_the_api(api, document):
    given = document["components"]["schemas"]["RunIn"]["properties"]["task"]
    # optional (a replay's task is its recipe's), and when given a string of this shape
    task = next(option for option in given.get("anyOf", [given]) if option.get("type") == "string")
    assert task["pattern"] == NOT_BLANK and task["maxLength"] == 20_000

    for blank in ("", " \t\n", "\x1c\u3000\x85"):
        error = error_of(api.post("/runs", {"task": blank}), 400)
        assert error["message"] == "task: is required and must not be empty"
    assert not Run.objects.exists()


def test_a_batch_of_no_tasks_is_invalid_by_the_document_and_refused(api, document):
    tasks = document["components"]["schemas"]["BatchIn"]["properties"]["tasks"]
    assert (tasks["minItems"], tasks["maxItems"]) == (1, 200)

    assert "tasks" in error_of(api.post("/batches", {"tasks": []}), 400)["message"]


def path_patterns(document: dict) -> dict[str, set[str]]:
    """Each id in a path, with every pattern the document gives it (one per operation)."""
    patterns: dict[str, set[str]] = {}
    for operations in document["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["schema"]["type"] == "string":
                    patterns.setdefault(parameter["name"], set()).add(parameter["schema"]["pattern"])
    return patterns


def test_every_id_in_a_path_has_the_pattern_of_the_ids_the_platform_makes(document):
    made = {
        "run_id": ids.run_id(),
        "session_id": ids.session_id(),
        "file_id": file_id(),
        "proxy_id": ids.proxy_id(),
        "profile_id": profile_id(),
        "batch_id": batch_id(),
        "endpoint_id": endpoint_id(),
        "delivery_id": delivery_id(),
        "schedule_id": schedule_id(),
        "recipe_id": recipe_id(),
        "suite_id": suite_id(),
        "browser_id": f"{BROWSER_PREFIX}{uuid.uuid4().hex}",
    }
    patterns = path_patterns(document)

    assert set(patterns) == set(made)
    for name, patterns_of_name in patterns.items():
        (pattern,) = patterns_of_name  # one shape per id, whichever operation names it
        assert re.search(pattern, made[name]), (name, pattern)
        assert not re.search(pattern, made[name] + "x")
    # the v4 API's UUIDs name the same runs and sessions
    assert re.search(next(iter(patterns["run_id"])), str(uuid.uuid4()))


def test_an_id_of_another_shape_is_404_like_one_that_does_not_exist(api, acme):
    run = make_run(acme)
    for path in (f"/runs/{run.session.public_id}", "/runs/run_x", "/sessions/nope", "/runs/run_%0A"):
        assert error_of(api.get(path), 404)["type"] == "not_found"
    assert api.get(f"/runs/{run.uuid}").json()["id"] == run.public_id


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/schedules/sch_%00"),
        ("get", "/batches/bat_%00"),
        ("get", "/profiles/prof_%00"),
        ("get", "/files/file_%00/content"),
        ("delete", "/proxies/proxy_%00"),
        ("delete", "/webhooks/endpoints/whe_%00"),
        ("post", "/webhooks/deliveries/whd_%00/resend"),
    ],
)
def test_a_nul_in_any_id_is_404_before_the_database_sees_it(api, method, path):
    """PostgreSQL refuses NUL in text: before ids had their shape checked, the lookups of these routers sent it on
    and answered 500."""
    error = error_of(getattr(api, method)(path), 404)
    assert error["message"].startswith("No ") and error["message"].endswith(" in this workspace.")


def test_white_space_in_the_pattern_is_exactly_what_the_services_strip():
    stripped = {chr(code) for code in range(0x10000) if chr(code).isspace()}
    in_pattern = {chr(code) for code in range(0x10000) if re.fullmatch(f"[{WHITE_SPACE}]", chr(code))}
    assert in_pattern == stripped


def test_the_name_pattern_takes_exactly_the_names_clean_name_takes():
    pattern = re.compile(name_pattern(10))
    alphabet = ["a", "é", " ", "\t", "\n", "\x1c", "\u3000", "\x85", "\x00", "\x01", "\x7f"]
    # Every string of up to 3 of these, and longer ones around the limit.
    samples = ["".join(chars) for size in range(4) for chars in itertools.product(alphabet, repeat=size)]
    samples += [" " + "a" * 10 + "\n", "a" * 11, "a" + "\t" + "a", "a" * 9 + "\x7f"]
    for name in samples:
        try:
            clean_name(name, 10)
            taken = True
        except InvalidRequest:
            taken = False
        assert taken == bool(pattern.search(name)), repr(name)


def test_judge_context_is_as_long_as_the_document_says_and_no_longer(api, acme, document):
    run = make_run(acme, status=Run.Status.SUCCEEDED)
    schema = document["components"]["schemas"]["RejudgeIn"]["properties"]["judge_context"]["anyOf"][0]
    assert schema["maxItems"] == 8
    statement = re.compile(schema["items"]["pattern"])
    assert statement.search(" " + "x" * 500 + "\n") and not statement.search("x" * 501) and not statement.search(" ")

    taken = api.post(f"/runs/{run.public_id}/rejudge", {"judge_context": [" " + "x" * 500 + "\n"] * 8})
    assert taken.status_code == 202, taken.content
    for refused in (["x"] * 9, ["x" * 501], ["  "]):
        error = error_of(api.post(f"/runs/{run.public_id}/rejudge", {"judge_context": refused}), 400)
        assert error["message"].startswith("Invalid request: judge_context")
