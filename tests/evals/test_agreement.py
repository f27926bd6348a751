"""Agreement with people: Cohen's kappa against a hand computation, labels imported from a file (by run id, and in
Online-Mind2Web's released shape by task id within a batch) or given in triage, a random-sample triage, agreement per
judge model and mode (and for the rule scorer and the claim) as JSON and CSV, and the leaderboard's honest
denominators: infrastructure endings counted apart, cost per task and per pass, per level."""

import csv
import io
import json
from decimal import Decimal

import pytest

from evals import stats
from evals.models import HumanLabel, RuleScore
from judge.models import Judgment
from runs.models import Run
from tests.support.statistics import kappa_by_hand, wilson_by_hand
from tests.support.suites import claiming_run, place_in_batch, suite_task

pytestmark = pytest.mark.django_db


def test_kappa_and_its_interval_match_a_hand_computation():
    # 20 both success, 5 rater only, 10 person only, 15 both failure
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + [(False, False)] * 15
    result = stats.agreement([*pairs, (None, True), (None, False)])
    kappa, se = kappa_by_hand(20, 5, 10, 15)
    assert kappa == pytest.approx(0.4)  # po 0.7, pe 0.5: by hand, once more
    assert result.kappa == pytest.approx(kappa, abs=1e-12)
    assert result.kappa_interval == pytest.approx((kappa - 1.959963984540054 * se, kappa + 1.959963984540054 * se))
    assert result.percent_agreement == pytest.approx(0.7) and (result.n, result.agree, result.undecided) == (50, 35, 2)
    assert result.rater_success_rate == pytest.approx(0.5) and result.human_success_rate == pytest.approx(0.6)
    assert result.success_rate_gap == pytest.approx(-0.1)
    assert result.matrix == {"both_success": 20, "rater_only": 5, "person_only": 10, "both_failure": 15}


def test_kappa_is_none_when_both_always_say_the_same_one_thing():
    result = stats.agreement([(True, True)] * 4)
    assert result.percent_agreement == 1.0 and result.kappa is None and result.kappa_interval is None


def suite_runs(acme, count: int, **fields) -> list[Run]:
    task = suite_task(acme, reference={"must_include": ["second"]}, external_id="a1")
    first = claiming_run(acme, **fields)
    item = place_in_batch(first, task)
    runs = [first]
    for repeat in range(1, count):
        run = claiming_run(acme, **fields)
        place_in_batch(run, task, batch=item.batch, repeat=repeat)
        runs.append(run)
    return runs


def test_labels_import_by_run_id_in_json_lines_and_csv_and_a_bad_line_imports_nothing(api, acme):
    runs = suite_runs(acme, 3)
    content = "\n".join(json.dumps({"run_id": run.public_id, "success": i != 1}) for i, run in enumerate(runs))
    response = api.post("/labels", {"content": content})
    assert response.status_code == 200, response.content
    assert response.json() == {"imported": 3, "skipped": []}
    assert dict(HumanLabel.objects.values_list("run__public_id", "success")) == {
        runs[0].public_id: True, runs[1].public_id: False, runs[2].public_id: True
    }  # fmt: skip
    assert set(HumanLabel.objects.values_list("source", flat=True)) == {"file"}

    csv_content = f"run_id,success\n{runs[0].public_id},0\n{runs[1].public_id},1\n"
    assert api.post("/labels", {"content": csv_content}).json()["imported"] == 2
    assert HumanLabel.objects.get(run=runs[0]).success is False

    bad = f'{{"run_id": "{runs[2].public_id}", "success": false}}\n{{"run_id": "{runs[0].public_id}", "success": "maybe"}}'
    response = api.post("/labels", {"content": bad})
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("line 2.success:")
    assert HumanLabel.objects.get(run=runs[2]).success is True, "nothing of the refused file was recorded"


def test_online_mind2web_human_labels_land_on_the_batchs_runs_of_each_task(api, acme):
    [run] = suite_runs(acme, 1)
    batch_id = run.batch_item.batch.public_id
    released = json.dumps([{"task_id": "a1", "Browser Use": 1, "Operator": 0}, {"task_id": "zz", "Browser Use": 2}])
    response = api.post("/labels", {"content": released, "batch_id": batch_id, "agent": "Browser Use"})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "imported": 1,
        "skipped": [{"line": 1, "id": "zz", "reason": "labelled not executable"}],
    }
    assert HumanLabel.objects.get(run=run).success is True
    response = api.post("/labels", {"content": released})
    assert response.status_code == 400 and response.json()["error"]["message"].startswith("line 1.success:")


def test_a_random_sample_draws_unlabelled_judged_runs_whatever_they_said_and_triage_labels_them(api, acme):
    runs = suite_runs(acme, 6)
    for index, run in enumerate(runs):
        Judgment.objects.create(run=run, verdict="pass" if index % 2 else "fail", reason="r", model="j")
    HumanLabel.objects.create(workspace=acme, run=runs[0], success=True, source="file")
    unjudged = claiming_run(acme)

    first = api.get("/triage/sample?size=3&seed=s1").json()["items"]
    again = api.get("/triage/sample?size=3&seed=s1").json()["items"]
    assert first == again and len(first) == 3
    every = {item["run_id"] for item in api.get("/triage/sample?size=50&seed=s2").json()["items"]}
    assert every == {run.public_id for run in runs[1:]}, "labelled and unjudged runs are not drawn"
    assert unjudged.public_id not in every
    assert {item["verdict"] for item in api.get("/triage/sample?size=50").json()["items"]} == {"pass", "fail"}

    response = api.post(f"/runs/{first[0]['run_id']}/label", {"success": False, "note": "Wrong heading."})
    assert response.status_code == 200 and response.json()["source"] == "triage"
    assert first[0]["run_id"] not in {item["run_id"] for item in api.get("/triage/sample?size=50").json()["items"]}


def test_agreement_per_judge_model_and_mode_for_the_rules_and_the_claim_in_json_and_csv(api, acme):
    runs = suite_runs(acme, 4)
    people = [True, True, False, False]
    standard = ["pass", "fail", "fail", "fail"]
    key_points = ["pass", "pass", "pass", "uncertain"]
    rules = [True, None, False, True]
    for run, label, s, k, r in zip(runs, people, standard, key_points, rules, strict=True):
        HumanLabel.objects.create(workspace=acme, run=run, success=label, source="file")
        Judgment.objects.create(run=run, verdict=s, reason="r", model="judge-a", mode="standard")
        Judgment.objects.create(run=run, verdict=k, reason="r", model="judge-a", mode="key_points")
        RuleScore.objects.create(run=run, passed=r)

    body = api.get(f"/agreement?suite_id={runs[0].batch_item.batch.suite.public_id}").json()
    raters = {(r["rater"], r["judge_mode"]): r for r in body["raters"]}
    assert set(raters) == {("judge", "standard"), ("judge", "key_points"), ("rules", ""), ("claim", "")}
    standard_row = raters[("judge", "standard")]
    kappa, _ = kappa_by_hand(1, 0, 1, 2)
    assert standard_row["judge_model"] == "judge-a" and standard_row["kappa"] == pytest.approx(kappa)
    assert standard_row["matrix"] == {"both_success": 1, "rater_only": 0, "person_only": 1, "both_failure": 2}
    assert standard_row["percent_agreement"] == pytest.approx(0.75)
    assert standard_row["success_rate_gap"] == pytest.approx(0.25 - 0.5)
    key_row = raters[("judge", "key_points")]
    assert (key_row["n"], key_row["undecided"], key_row["agree"]) == (3, 1, 2)
    assert raters[("rules", "")]["matrix"] == {"both_success": 1, "rater_only": 1, "person_only": 0, "both_failure": 1}
    assert raters[("rules", "")]["undecided"] == 1
    claim = raters[("claim", "")]  # every run claimed success
    assert claim["rater_success_rate"] == 1.0 and claim["kappa"] == pytest.approx(0.0)
    assert body["runs"][0]["verdicts"] == {"judge-a/standard": True, "judge-a/key_points": True}

    response = api.get("/agreement?format=csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    by_rater = {(row["rater"], row["judge_mode"]): row for row in rows}
    assert float(by_rater[("judge", "standard")]["kappa"]) == pytest.approx(kappa)
    assert by_rater[("judge", "key_points")]["undecided"] == "1"


def test_the_leaderboard_leaves_infrastructure_endings_out_and_gives_cost_per_task_and_pass_per_level(api, acme):
    easy = suite_task(acme, external_id="e1", level="easy")
    hard = suite_task(acme, external_id="h1", level="hard", suite=easy.suite)
    passed = claiming_run(acme, cost_usd=Decimal("0.10"))
    item = place_in_batch(passed, easy)
    batch = item.batch
    failed = claiming_run(acme, cost_usd=Decimal("0.30"))
    place_in_batch(failed, hard, batch=batch)
    crashed = claiming_run(acme, status=Run.Status.FAILED, error_code="browser_error", cost_usd=Decimal("0.05"))
    place_in_batch(crashed, easy, batch=batch, repeat=1)
    lost = claiming_run(acme, status=Run.Status.FAILED, error_code="worker_lost")
    place_in_batch(lost, hard, batch=batch, repeat=1)
    blocked = claiming_run(acme, cost_usd=Decimal("0.20"))
    place_in_batch(blocked, hard, batch=batch, repeat=2)
    Judgment.objects.create(run=passed, verdict="pass", reason="r", model="j")
    Judgment.objects.create(run=failed, verdict="fail", reason="r", model="j")
    Judgment.objects.create(run=blocked, verdict="fail", reason="captcha", model="j", blocked=True)

    body = api.get(f"/suites/{easy.suite.public_id}/leaderboard").json()
    [row] = body["rows"]
    total = row["total"]
    assert (row["model"], row["judge_mode"], total["runs"], total["passes"]) == ("claude-sonnet-5-5", "standard", 2, 1)
    assert total["success_rate"] == 0.5
    low, high = wilson_by_hand(1, 2)
    assert total["success_interval"] == {"low": pytest.approx(low), "high": pytest.approx(high)}
    assert total["infrastructure_failures"] == 3
    assert sorted(entry["reason"] for entry in total["infrastructure"]) == ["blocked", "browser_error", "worker_lost"]
    assert Decimal(total["cost_usd"]) == Decimal("0.40")
    assert Decimal(total["cost_per_task_usd"]) == Decimal("0.20") and Decimal(total["cost_per_pass_usd"]) == Decimal(
        "0.40"
    )
    levels = {level["level"]: level for level in row["levels"]}
    assert (levels["easy"]["runs"], levels["easy"]["passes"], levels["easy"]["infrastructure_failures"]) == (1, 1, 1)
    assert (levels["hard"]["runs"], levels["hard"]["passes"], levels["hard"]["infrastructure_failures"]) == (1, 0, 2)
    assert levels["hard"]["cost_per_pass_usd"] is None
    assert row["pass_k"] == 2 and row["pass_at_k"] is None, "no task has two counted runs"
