"""The suite pages: Batches → Suites imports a file (and shows a refusal with its line), a suite's page lists its tasks,
retires one and launches a batch over the rest, the leaderboard shows success, intervals, cost per pass and
infrastructure failures apart, and the random-sample triage labels a run; another workspace sees none of it."""

import io
from decimal import Decimal

import pytest

from evals.models import Batch, HumanLabel, Suite
from judge.models import Judgment
from runs.models import Run
from tests.support.suites import claiming_run, place_in_batch, suite_task

pytestmark = pytest.mark.django_db

WEBVOYAGER = (
    '{"web_name": "Shop", "id": "Shop--0", "ques": "Find the kettle.", "web": "https://shop.example/"}\n'
    '{"web_name": "Shop", "id": "Shop--1", "ques": "Find the <b>toaster</b>.", "web": "https://shop.example/"}\n'
)


def upload(text: str, name: str = "suite.jsonl") -> io.BytesIO:
    data = io.BytesIO(text.encode())
    data.name = name
    return data


def test_an_operator_imports_retires_and_launches_from_the_pages(alice_client, acme):
    page = alice_client.get("/batches/")
    assert 'href="/batches/suites/"' in page.content.decode()
    response = alice_client.post("/batches/suites/", {"format": "webvoyager", "file": upload(WEBVOYAGER), "name": "wv"})
    suite = Suite.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/batches/suites/{suite.public_id}/"
    page = alice_client.get(response["Location"]).content.decode()
    assert "Shop--1" in page and "Find the &lt;b&gt;toaster&lt;/b&gt;." in page and "<b>toaster" not in page

    alice_client.post(f"/batches/suites/{suite.public_id}/tasks/Shop--0/stale/", {"stale": "1"})
    assert suite.tasks.get(external_id="Shop--0").stale
    response = alice_client.post(
        f"/batches/suites/{suite.public_id}/",
        {"config_model": ["claude-sonnet-5-5", "claude-haiku-5-5"], "config_thinking": ["", ""],
         "config_effort": ["", ""], "config_max_turns": ["5", ""], "judge": "on", "judge_mode": "key_points",
         "repeats": "1", "concurrency": "1"},
    )  # fmt: skip
    batch = Batch.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/batches/{batch.public_id}/"
    assert batch.judge_mode == "key_points" and batch.items.count() == 2
    assert [t.suite_task.external_id for t in batch.tasks.all()] == ["Shop--1"]


def test_a_malformed_file_is_refused_on_the_page_with_its_line_and_nothing_imported(alice_client, acme):
    bad = WEBVOYAGER.replace('"ques": "Find the kettle."', '"ques": 7.5')
    response = alice_client.post("/batches/suites/", {"format": "webvoyager", "file": upload(bad)})
    assert response.status_code == 400
    assert "line 1.ques: must be a string" in response.content.decode()
    assert not Suite.objects.exists()


def test_the_leaderboard_shows_success_cost_per_pass_and_infrastructure_apart(alice_client, acme):
    task = suite_task(acme, level="easy")
    passed = claiming_run(acme, cost_usd=Decimal("0.25"))
    batch = place_in_batch(passed, task).batch
    crashed = claiming_run(acme, status=Run.Status.FAILED, error_code="model_error")
    place_in_batch(crashed, task, batch=batch, repeat=1)
    Judgment.objects.create(run=passed, verdict="pass", reason="r", model="j")
    HumanLabel.objects.create(workspace=acme, run=passed, success=True, source="file")

    page = alice_client.get(f"/batches/suites/{task.suite.public_id}/leaderboard/").content.decode()
    assert "claude-sonnet-5-5" in page and "100%" in page and "$0.2500" in page
    assert crashed.public_id in page and "model_error" in page
    assert 'id="agreement"' in page and "claim" in page


def test_the_random_sample_labels_a_run_as_triage(alice_client, acme):
    run = claiming_run(acme)
    Judgment.objects.create(run=run, verdict="fail", reason="r", model="j")
    page = alice_client.get("/triage/sample/?seed=3").content.decode()
    assert run.public_id in page
    response = alice_client.post(f"/triage/sample/runs/{run.public_id}/label/", {"success": "1", "seed": "3"})
    assert response.status_code == 302 and response["Location"] == "/triage/sample/?seed=3"
    label = HumanLabel.objects.get(run=run)
    assert (label.success, label.source) == (True, "triage")
    assert "Every judged run is labelled." in alice_client.get("/triage/sample/").content.decode()


def test_another_workspace_gets_404_on_every_suite_page(alice_client, charlie_client, acme):
    alice_client.post("/batches/suites/", {"format": "webvoyager", "file": upload(WEBVOYAGER)})
    suite = Suite.objects.get()
    for path in (f"/batches/suites/{suite.public_id}/", f"/batches/suites/{suite.public_id}/leaderboard/"):
        assert charlie_client.get(path).status_code == 404
    assert (
        charlie_client.post(f"/batches/suites/{suite.public_id}/tasks/Shop--0/stale/", {"stale": "1"}).status_code
        == 404
    )
    assert suite.public_id not in charlie_client.get("/batches/suites/").content.decode()
    run = claiming_run(acme)
    assert charlie_client.post(f"/triage/sample/runs/{run.public_id}/label/", {"success": "1"}).status_code == 404
