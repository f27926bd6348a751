"""Batches: planning and concurrency, and the statistics per task x configuration, checked against numbers computed
here independently (the judgments are rows written directly: this file is about the statistics, not the judge)."""

import statistics
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from evals import stats
from evals.models import Batch, BatchConfig, BatchRun
from evals.services import parse_suite
from judge.models import Judgment
from runs.models import Run
from tests.support.statistics import matrix_cell, pass_at_k_by_product, wilson_by_hand

pytestmark = pytest.mark.django_db

TASKS = [
    {"task": "Find the kettle's price.", "start_url": "http://127.0.0.1:9/shop", "judge_context": ["Euros."]},
    {"task": "Subscribe to the newsletter."},
    {"task": "Count the products.", "expected": {"count": 3, "first": "Kettle"}},
]
CONFIGS = [{"model": "claude-sonnet-5-5", "max_turns": 10}, {"model": "claude-haiku-5-5", "effort": "low"}]

# (agent success, verdict, blocked, impossible, turns, cost, seconds, data) per run, by (task, config).
OUTCOMES = {
    (0, 0): [(True, "pass", False, False, 3, "0.010", 10, None)] * 4,
    (0, 1): [
        (True, "pass", False, False, 4, "0.020", 12, None),
        (True, "pass", False, False, 6, "0.020", 20, None),
        (True, "fail", False, False, 5, "0.030", 30, None),
        (False, "fail", False, False, 9, "0.030", 40, None),
    ],
    (1, 0): [
        (True, "pass", False, False, 2, "0.001", 5, None),
        (True, "fail", False, False, 2, "0.001", 5, None),
        (False, "pass", False, False, 7, "0.004", 9, None),
        (False, "fail", False, False, 8, "0.004", 11, None),
    ],
    (1, 1): [
        (False, "fail", False, False, 10, "0.002", 30, None),
        (False, "fail", False, False, 10, "0.002", 30, None),
        (False, "fail", False, False, 10, "0.002", 31, None),
        (False, "uncertain", False, False, 10, "0.002", 33, None),
    ],
    (2, 0): [
        (True, "pass", False, False, 3, "0.100", 8, {"count": 3, "first": "Kettle"}),
        (False, "fail", False, False, 4, "0.100", 9, {"count": 2, "first": "Kettle"}),
        (False, "fail", True, False, 1, "0.100", 3, None),
        (False, "fail", False, True, 1, "0.100", 3, {"count": 3, "first": "Toaster"}),
    ],
    (2, 1): [
        (True, "pass", False, False, 3, "0.050", 7, {"count": 3, "first": "Kettle"}),
        (True, "pass", False, False, 3, "0.050", 7, {"count": 3, "first": "Kettle"}),
        (True, "pass", False, False, 4, "0.050", 8, {"count": 3, "first": "Kettle", "extra": 1}),
        (True, "uncertain", False, False, 5, "0.050", 9, {"count": 4, "first": "Kettle"}),
    ],
}


def play_outcomes(batch: Batch) -> None:
    """End every run of the batch as OUTCOMES says and write its judgment."""
    now = timezone.now()
    for item in BatchRun.objects.filter(batch=batch).select_related("task", "config", "run"):
        success, verdict, blocked, impossible, turns, cost, seconds, data = OUTCOMES[
            (item.task.position, item.config.position)
        ][item.repeat]
        Run.objects.filter(pk=item.run_id).update(
            status=Run.Status.SUCCEEDED if success else Run.Status.FAILED,
            success=success,
            data=data,
            signals={"turns": turns, "max_turns": 10},
            cost_usd=Decimal(cost),
            started_at=now - timedelta(seconds=seconds),
            finished_at=now,
        )
        Judgment.objects.create(
            run_id=item.run_id, verdict=verdict, reason="scripted", blocked=blocked, impossible=impossible, model="j"
        )


@pytest.fixture
def batch_out(api):
    created = api.post(
        "/batches", {"name": "shop", "tasks": TASKS, "configs": CONFIGS, "repeats": 4, "concurrency": 24}
    )
    assert created.status_code == 201, created.content
    batch = Batch.objects.get(public_id=created.json()["id"])
    play_outcomes(batch)
    response = api.get(f"/batches/{batch.public_id}")
    assert response.status_code == 200, response.content
    return response.json()


def test_a_batch_plans_every_task_configuration_and_repeat_as_one_run(api):
    created = api.post("/batches", {"tasks": TASKS, "configs": CONFIGS, "repeats": 4, "concurrency": 5})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["counts"]["planned"] == 24
    assert body["counts"]["launched"] == 5, "only as many runs as the concurrency allows start at once"
    batch = Batch.objects.get(public_id=body["id"])
    runs = Run.objects.filter(batch_item__batch=batch)
    assert runs.count() == 5
    first = runs.get(batch_item__task__position=0, batch_item__config__position=0, batch_item__repeat=0)
    assert (first.model, first.max_turns, first.judge_context) == ("claude-sonnet-5-5", 10, ["Euros."])
    assert first.metadata == {"batch_id": body["id"]}
    assert BatchConfig.objects.get(batch=batch, position=1).effort == "low", "effort is kept on the configuration"


def test_a_configuration_takes_every_effort_level_its_model_offers_as_a_launch_does(api):
    created = api.post("/batches", {"tasks": TASKS[:1], "configs": [{"model": "claude-sonnet-5-5", "effort": "xhigh"}]})
    assert created.status_code == 201, created.content
    run = Run.objects.get(batch_item__batch__public_id=created.json()["id"])
    assert run.effort == "xhigh"
    refused = api.post("/batches", {"tasks": TASKS[:1], "configs": [{"effort": "turbo"}]})
    assert refused.json()["error"]["message"].startswith("configs[0].effort: 'turbo' is not an effort level of ")


def test_a_finished_run_frees_a_slot_for_the_next_planned_run(api):
    from evals.services import fill_slots

    created = api.post("/batches", {"tasks": TASKS[:1], "repeats": 3, "concurrency": 2, "judge": False}).json()
    batch = Batch.objects.get(public_id=created["id"])
    assert fill_slots(batch.pk) == 0, "no slot is free while two runs are active"
    Run.objects.filter(batch_item__batch=batch).filter(pk=batch.items.order_by("id").first().run_id).update(
        status=Run.Status.FAILED, success=False, finished_at=timezone.now()
    )
    assert fill_slots(batch.pk) == 1
    assert batch.items.filter(run__isnull=True).count() == 0
    Run.objects.filter(batch_item__batch=batch).update(status=Run.Status.SUCCEEDED, finished_at=timezone.now())
    fill_slots(batch.pk)
    batch.refresh_from_db()
    assert batch.status == Batch.Status.FINISHED and batch.finished_at is not None


def test_rates_intervals_pass_at_k_and_matrix_match_an_independent_computation(batch_out):
    groups = {(g["task_index"], g["config_index"]): g for g in batch_out["groups"]}
    assert len(groups) == 6
    total_matrix = dict.fromkeys(stats.CELLS, 0)
    for key, planned in OUTCOMES.items():
        group = groups[key]
        # A run the judge found blocked by the site is an infrastructure failure: apart, out of every rate.
        outcomes = [o for o in planned if not o[2]]
        assert group["infrastructure_failures"] == len(planned) - len(outcomes)
        n = len(outcomes)
        successes = sum(1 for o in outcomes if o[0])
        passes = sum(1 for o in outcomes if o[1] == "pass")
        assert group["runs"] == n and group["successes"] == successes and group["passes"] == passes
        assert group["success_rate"] == pytest.approx(successes / n)
        low, high = wilson_by_hand(successes, n)
        assert group["success_interval"]["low"] == pytest.approx(low, abs=1e-12)
        assert group["success_interval"]["high"] == pytest.approx(high, abs=1e-12)
        assert group["pass_at_1"] == pytest.approx(passes / n)
        for k in range(1, n + 1):
            assert group["pass_at"][str(k)] == pytest.approx(pass_at_k_by_product(n, passes, k), abs=1e-12)
        assert group["pass_k"] == 4
        assert group["pass_at_k"] == (pytest.approx(pass_at_k_by_product(n, passes, 4)) if n >= 4 else None)
        assert group["median_turns"] == statistics.median(o[4] for o in outcomes)
        assert group["median_duration_seconds"] == pytest.approx(statistics.median(o[6] for o in outcomes), abs=0.01)
        cost = sum(Decimal(o[5]) for o in outcomes)
        assert Decimal(group["cost_usd"]) == cost
        assert Decimal(group["cost_per_run_usd"]) == (cost / n).quantize(Decimal("0.00000001"))
        expected_per_success = (cost / passes).quantize(Decimal("0.00000001")) if passes else None
        assert (
            Decimal(group["cost_per_success_usd"]) if group["cost_per_success_usd"] else None
        ) == expected_per_success
        assert group["flaky"] == (0 < passes < n)

        cells = dict.fromkeys(stats.CELLS, 0)
        for success, verdict, blocked, impossible, *_ in outcomes:
            name = matrix_cell(success, verdict, blocked or impossible)
            cells[name] += 1
            total_matrix[name] += 1
        assert group["matrix"] == cells
    assert batch_out["matrix"] == total_matrix
    assert batch_out["matrix"] == {
        "success_pass": 11,
        "overclaim": 2,
        "underclaim": 1,
        "failure_fail": 6,
        "uncertain": 2,
        "blocked_or_impossible": 1,
    }
    assert [entry["reason"] for entry in batch_out["infrastructure"]] == ["blocked"]
    # The interval of a group with no success starts at zero and is not degenerate.
    assert groups[(1, 1)]["success_interval"]["low"] == 0.0
    assert groups[(1, 1)]["success_interval"]["high"] == pytest.approx(0.4898908, abs=1e-6)


def test_runs_are_scored_against_expected_data_exactly_and_per_field(batch_out):
    groups = {(g["task_index"], g["config_index"]): g for g in batch_out["groups"]}
    assert groups[(0, 0)]["scoring"] is None, "a task without expected data is not scored"
    first = groups[(2, 0)]["scoring"]
    # the run the judge found blocked is out of the scoring as of every rate
    assert first == {
        "runs": 3,
        "exact": 1,
        "exact_rate": pytest.approx(1 / 3),
        "fields": {"count": pytest.approx(2 / 3), "first": pytest.approx(2 / 3)},
    }
    second = groups[(2, 1)]["scoring"]
    assert second == {"runs": 4, "exact": 2, "exact_rate": 0.5, "fields": {"count": 0.75, "first": 1.0}}


def test_the_batch_page_shows_the_statistics_and_the_matrix(api, alice_client):
    created = api.post(
        "/batches", {"name": "page", "tasks": TASKS, "configs": CONFIGS, "repeats": 4, "concurrency": 24}
    )
    batch = Batch.objects.get(public_id=created.json()["id"])
    play_outcomes(batch)
    page = alice_client.get(f"/batches/{batch.public_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Subscribe to the newsletter." in html and "claude-haiku-5-5" in html
    assert 'data-cell="overclaim">2<' in html
    assert "flaky" in html
    assert alice_client.get("/batches/").status_code == 200


def test_charlie_cannot_see_acmes_batch(api, umbrella_api, charlie_client):
    created = api.post("/batches", {"tasks": TASKS[:1]}).json()
    assert umbrella_api.get(f"/batches/{created['id']}").status_code == 404
    assert umbrella_api.post(f"/batches/{created['id']}/cancel").status_code == 404
    assert charlie_client.get(f"/batches/{created['id']}/").status_code == 404
    assert umbrella_api.get("/batches").json()["batches"] == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"tasks": []}, "tasks"),
        ({"tasks": TASKS, "repeats": 101}, "repeats"),
        ({"tasks": TASKS, "repeats": 0}, "repeats"),
        ({"tasks": [{"task": "x", "judge_context": ["y"] * 9}]}, "tasks[0].judge_context"),
        ({"tasks": [{"task": "x", "start_url": "ftp://x"}]}, "tasks[0].start_url"),
        ({"tasks": TASKS, "configs": [{"max_turns": 500}]}, "configs[0].max_turns"),
        ({"tasks": TASKS, "concurrency": 51}, "concurrency"),
    ],
)
def test_a_bad_batch_is_refused_naming_the_field_before_anything_is_created(api, body, field):
    response = api.post("/batches", body)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["type"] == "invalid_request"
    assert field in response.json()["error"]["message"]
    assert not Batch.objects.exists() and not Run.objects.exists()


def test_a_suite_reads_from_jsonl_and_csv():
    jsonl = b'{"task": "One", "expected": {"a": 1}}\n\n{"task": "Two", "judge_context": ["c"]}\n'
    assert parse_suite(jsonl, "suite.jsonl") == [
        {"task": "One", "expected": {"a": 1}},
        {"task": "Two", "judge_context": ["c"]},
    ]
    csv_text = b'task,start_url,expected\nOne,http://x.test/,"{""a"": 1}"\nTwo,,\n'
    assert parse_suite(csv_text, "suite.csv") == [
        {"task": "One", "start_url": "http://x.test/", "expected": {"a": 1}},
        {"task": "Two"},
    ]


def test_the_suite_upload_form_launches_a_batch(alice_client, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    suite = SimpleUploadedFile("suite.jsonl", b'{"task": "One"}\n{"task": "Two"}\n', content_type="application/jsonl")
    response = alice_client.post(
        "/batches/new/",
        {"suite": suite, "repeats": "3", "concurrency": "2", "judge": "on", "config_model": ["", "claude-haiku-5-5"],
         "config_effort": ["", "low"], "config_max_turns": ["", "5"]},
    )  # fmt: skip
    assert response.status_code == 302, response.content
    batch = Batch.objects.get()
    assert batch.items.count() == 2 * 2 * 3
    assert list(batch.configs.values_list("model", "effort", "max_turns")) == [
        (settings.DEFAULT_MODEL, "", 30),  # a configuration that names no model runs the default
        ("claude-haiku-5-5", "low", 5),
    ]


def test_the_openapi_document_names_the_evaluation_and_webhook_schemas(api):
    document = api.get("/openapi.json").json()
    for path in ("/api/v1/batches", "/api/v1/batches/{batch_id}", "/api/v1/batches/{batch_id}/rejudge",
                 "/api/v1/triage", "/api/v1/judgments/{judgment_id}/truth", "/api/v1/calibration",
                 "/api/v1/webhooks/endpoints", "/api/v1/webhooks/deliveries/{delivery_id}/resend"):  # fmt: skip
        assert path in document["paths"], path
    schemas = document["components"]["schemas"]
    for name in ("BatchIn", "BatchOut", "GroupOut", "MatrixOut", "TriageItemOut", "TruthIn", "CalibrationReportOut",
                 "EndpointIn", "EndpointCreatedOut", "DeliveryOut"):  # fmt: skip
        assert name in schemas, name
    assert "Wilson" in schemas["GroupOut"]["properties"]["success_interval"]["description"]


def test_cancelling_a_batch_cancels_its_queued_runs_and_launches_no_more(api):
    created = api.post("/batches", {"tasks": TASKS[:2], "repeats": 3, "concurrency": 2, "judge": False}).json()
    response = api.post(f"/batches/{created['id']}/cancel")
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    runs = api.get(f"/batches/{created['id']}/runs").json()["runs"]
    assert len(runs) == 6
    assert [r["status"] for r in runs if r["run_id"]] == ["cancelled", "cancelled"]
    assert sum(1 for r in runs if r["run_id"] is None) == 4
    from evals.services import fill_slots

    assert fill_slots(Batch.objects.get(public_id=created["id"]).pk) == 0
    assert api.post(f"/batches/{created['id']}/cancel").json()["status"] == "cancelled", "idempotent"


def test_rejudging_from_the_page_starts_a_round_and_charlie_cannot(api, alice_client, charlie_client):
    created = api.post("/batches", {"tasks": TASKS[:1], "repeats": 2}).json()
    batch = Batch.objects.get(public_id=created["id"])
    Run.objects.filter(batch_item__batch=batch).update(status=Run.Status.SUCCEEDED, finished_at=timezone.now())
    assert charlie_client.post(f"/batches/{batch.public_id}/rejudge/", {"judge_context": "x"}).status_code == 404
    response = alice_client.post(f"/batches/{batch.public_id}/rejudge/", {"judge_context": "Euros only.\nNo VAT."})
    assert response.status_code == 302
    round_ = batch.rounds.get()
    assert round_.number == 1 and round_.judge_context == ["Euros only.", "No VAT."]
    assert round_.requested_by.username == "alice"
