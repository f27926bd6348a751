"""Suites: small files in each format written here and imported through the API (JSON and multipart), WebArena's
placeholders mapped or skipped, malformed files refused naming their line and field with nothing imported, retiring
a task, launching a batch over a suite, and another workspace refused."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from evals.models import Batch, Suite, SuiteTask

pytestmark = pytest.mark.django_db

WEBVOYAGER = "\n".join(
    json.dumps(item)
    for item in [
        {"web_name": "Allrecipes", "id": "Allrecipes--0", "ques": "Find a vegetarian lasagna recipe.",
         "web": "https://www.allrecipes.com/"},
        {"web_name": "Allrecipes", "id": "Allrecipes--1", "ques": "Find a cookie recipe with over 100 reviews.",
         "web": "https://www.allrecipes.com/", "answer": "Chocolate chip cookies"},
        {"web_name": "Apple", "id": "Apple--0", "ques": "How much does the cheapest iPad cost?",
         "web": "https://www.apple.com/"},
    ]
)  # fmt: skip

MIND2WEB = json.dumps(
    [
        {"task_id": "a1", "website": "https://www.kayak.com/", "task_description": "Find a flight.",
         "reference_length": 4},
        {"task_id": "b2", "website": "https://www.ikea.com/", "task_description": "Add a desk to the cart.",
         "reference_length": 8},
        {"task_id": "c3", "website": "https://www.nps.gov/", "task_description": "Find a permit.",
         "reference_length": 14},
    ],
    indent=1,
)  # fmt: skip


def webarena_config(task_id: int, start_url: str, **evaluation) -> dict:
    return {
        "sites": ["shopping"],
        "task_id": task_id,
        "intent": f"Task {task_id}: open the second page.",
        "start_url": start_url,
        "eval": {"eval_types": ["string_match"], "reference_answers": {"must_include": ["Second"]}, **evaluation},
    }


WEBARENA = json.dumps(
    [
        webarena_config(
            0,
            "__SHOPPING__/index.html",
            reference_url="__SHOPPING__/second.html",
            program_html=[{"url": "last", "locator": "document.querySelector('h1').outerText",
                           "required_contents": {"must_include": ["Second page"]}}],
        ),
        webarena_config(1, "__GITLAB__/explore"),
    ],
    indent=2,
)  # fmt: skip


def test_a_webvoyager_file_imports_through_json_with_its_reference_answers(api, acme):
    response = api.post("/suites", {"format": "webvoyager", "content": WEBVOYAGER, "name": "wv"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("sui_") and body["name"] == "wv" and body["tasks"] == 3 and body["skipped"] == []
    tasks = {task.external_id: task for task in SuiteTask.objects.filter(suite__public_id=body["id"])}
    assert tasks["Allrecipes--1"].intent == "Find a cookie recipe with over 100 reviews."
    assert tasks["Allrecipes--1"].start_url == "https://www.allrecipes.com/"
    assert tasks["Allrecipes--1"].reference == {"answer": "Chocolate chip cookies"}
    assert tasks["Apple--0"].website == "Apple" and not tasks["Apple--0"].stale


def test_online_mind2web_levels_follow_the_reference_length(api, acme):
    response = api.post("/suites", {"format": "online-mind2web", "content": MIND2WEB})
    assert response.status_code == 201, response.content
    levels = dict(SuiteTask.objects.filter(suite__public_id=response.json()["id"]).values_list("external_id", "level"))
    assert levels == {"a1": "easy", "b2": "medium", "c3": "hard"}


def test_webarena_placeholders_map_to_the_operators_addresses_and_an_unmapped_one_is_skipped(api, acme):
    upload = SimpleUploadedFile("test.raw.json", WEBARENA.encode(), content_type="application/json")
    response = api.client.post(
        "/api/v1/suites",
        {"file": upload, "format": "webarena", "sites": json.dumps({"__SHOPPING__": "http://127.0.0.1:7770/"})},
        headers=api.headers,
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["tasks"] == 1
    # the line the second config starts on, in the array as written
    line = WEBARENA.count("\n", 0, WEBARENA.rindex("{", 0, WEBARENA.index('"task_id": 1'))) + 1
    assert line > 20
    assert body["skipped"] == [{"line": line, "external_id": "1", "reason": "no address was given for __GITLAB__"}]
    task = SuiteTask.objects.get(suite__public_id=body["id"])
    assert task.start_url == "http://127.0.0.1:7770/index.html"
    assert task.reference["reference_url"] == "http://127.0.0.1:7770/second.html"
    assert task.reference["must_include"] == ["Second"]
    assert task.reference["program_html"] == [
        {"url": "last", "locator": "document.querySelector('h1').outerText", "must_include": ["Second page"]}
    ]
    assert Suite.objects.get(public_id=body["id"]).sites == {"__SHOPPING__": "http://127.0.0.1:7770"}


def test_our_own_jsonl_keeps_its_fields(api, acme):
    content = "\n".join(
        json.dumps(item)
        for item in [
            {"task": "Count the products.", "expected": {"count": 3}, "external_id": "count", "level": "easy"},
            {"task": "Read the heading.", "judge_context": ["The heading is the h1."]},
        ]
    )
    response = api.post("/suites", {"format": "jsonl", "content": content})
    assert response.status_code == 201, response.content
    tasks = list(SuiteTask.objects.filter(suite__public_id=response.json()["id"]))
    assert [(t.external_id, t.level, t.expected) for t in tasks] == [("count", "easy", {"count": 3}), ("2", "", None)]
    assert tasks[1].judge_context == ["The heading is the h1."]


@pytest.mark.parametrize(
    ("format", "content", "field"),
    [
        ("webvoyager", WEBVOYAGER.replace('"ques": "How much', '"question": "How much'), "line 3.ques"),
        ("webvoyager", WEBVOYAGER + "\n{not json", "line 4.json"),
        ("online-mind2web", MIND2WEB.replace('"reference_length": 8', '"reference_length": "eight"'),
         "line 8.reference_length"),
        ("webarena", WEBARENA.replace('"string_match"', '"html_match"', 1), "line 2.eval.eval_types"),
        ("jsonl", '{"task": "One."}\n{"task": "Two.", "colour": "red"}', "line 2.colour"),
        ("webvoyager", WEBVOYAGER.replace("Apple--0", "Allrecipes--0"), "line 3.id"),
        ("webvoyager", WEBVOYAGER.replace("https://www.apple.com/", "ftp://apple.example/"), "line 3.start_url"),
    ],
    ids=["missing-field", "not-json", "wrong-type", "unknown-eval-type", "unknown-field", "duplicate-id", "bad-url"],
)  # fmt: skip
def test_a_malformed_file_names_the_line_and_field_and_imports_nothing(api, acme, format, content, field):
    response = api.post("/suites", {"format": format, "content": content})
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["type"] == "invalid_request"
    assert error["message"].startswith(f"{field}:"), error["message"]
    assert not Suite.objects.exists() and not SuiteTask.objects.exists()


def test_a_multipart_import_without_its_format_is_refused_naming_it(api, acme):
    upload = SimpleUploadedFile("suite.jsonl", WEBVOYAGER.encode())
    response = api.client.post("/api/v1/suites", {"file": upload}, headers=api.headers)
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("format:")
    response = api.client.post("/api/v1/suites", {"format": "webvoyager"}, headers=api.headers)
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("file:")


def test_an_unknown_format_and_a_bad_site_address_are_refused(api, acme):
    response = api.post("/suites", {"format": "miniwob", "content": WEBVOYAGER})
    assert response.status_code == 400
    response = api.post("/suites", {"format": "webarena", "content": WEBARENA, "sites": {"__SHOPPING__": "nowhere"}})
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("sites.__SHOPPING__:")
    assert not Suite.objects.exists()


def test_a_retired_task_is_listed_stale_and_left_out_of_a_launch(api, acme):
    suite_id = api.post("/suites", {"format": "webvoyager", "content": WEBVOYAGER}).json()["id"]
    response = api.patch(f"/suites/{suite_id}/tasks", {"external_id": "Apple--0", "stale": True})
    assert response.status_code == 200 and response.json()["stale"] is True
    listed = api.get("/suites").json()["suites"]
    assert [(s["id"], s["tasks"], s["stale"]) for s in listed] == [(suite_id, 3, 1)]

    response = api.post(
        f"/suites/{suite_id}/batches",
        {"configs": [{"model": "claude-sonnet-5-5"}, {"model": "claude-haiku-5-5"}], "judge_mode": "key_points",
         "concurrency": 1},
    )  # fmt: skip
    assert response.status_code == 201, response.content
    batch = Batch.objects.get(public_id=response.json()["id"])
    assert batch.suite.public_id == suite_id and batch.judge_mode == "key_points"
    assert [task.suite_task.external_id for task in batch.tasks.all()] == ["Allrecipes--0", "Allrecipes--1"]
    assert batch.items.count() == 4
    launched = batch.items.exclude(run=None).get()
    assert launched.run.metadata == {"batch_id": batch.public_id, "judge_mode": "key_points"}


def test_another_workspace_sees_no_suite_of_this_one(api, umbrella_api, acme):
    suite_id = api.post("/suites", {"format": "webvoyager", "content": WEBVOYAGER}).json()["id"]
    assert umbrella_api.get(f"/suites/{suite_id}").status_code == 404
    assert (
        umbrella_api.patch(f"/suites/{suite_id}/tasks", {"external_id": "Apple--0", "stale": True}).status_code == 404
    )
    assert umbrella_api.post(f"/suites/{suite_id}/batches", {}).status_code == 404
    assert umbrella_api.get("/suites").json() == {"suites": []}
    assert api.client.post("/api/v1/suites", {"format": "webvoyager"}).status_code == 401
