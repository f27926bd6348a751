"""Hostile input to the API: a 10 MB body is refused by its size before anything parses it (the fuzzing of every
endpoint from the OpenAPI document is tests/api/test_fuzz.py)."""

import time

from runs.models import Run

TEN_MB = 10 * 1024 * 1024


def test_a_ten_megabyte_body_is_refused_by_size_before_parsing(api):
    started = time.monotonic()
    # Not JSON at all: a parser would answer 400 "not valid JSON"; the size check answers first.
    response = api.post("/runs", raw="{" * TEN_MB)
    assert response.status_code == 413
    body = response.json()
    assert body["error"]["type"] == "invalid_request"
    assert body["error"]["detail"]["limit"] < TEN_MB
    assert time.monotonic() - started < 5
    assert not Run.objects.exists()


def test_a_ten_megabyte_valid_json_body_is_refused_too(api):
    response = api.post("/runs", {"task": "x" * TEN_MB})
    assert response.status_code == 413
    assert not Run.objects.exists()
