"""Claim versus judge: the triage queue across the workspace, truths recorded by operators, the judge's calibration
that follows from them, and a re-judged batch showing what changed."""

from datetime import timedelta

import pytest
from django.utils import timezone

from evals.models import Batch, JudgeRound, Truth
from judge.models import Judgment
from runs.events import emit
from runs.models import Run
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db


def judged_run(workspace, *, success: bool | None, verdicts: list[tuple], task: str = "Buy the kettle.") -> Run:
    """A finished run and its judgments: (verdict, minutes ago, model[, blocked, impossible]) each."""
    run = make_run(
        workspace,
        task=task,
        status=Run.Status.SUCCEEDED if success else Run.Status.FAILED,
        success=success,
        output="The kettle is in the basket." if success else "Could not find the kettle.",
        data={"basket": ["Kettle"]} if success else None,
        judge=True,
        finished_at=timezone.now(),
    )
    for verdict, minutes_ago, model, *flags in verdicts:
        blocked, impossible = [*flags, False, False][:2]
        Judgment.objects.create(
            run=run,
            verdict=verdict,
            reason=f"<script>alert('{verdict}')</script> The basket page says otherwise.",
            blocked=blocked,
            impossible=impossible,
            model=model,
            judged_at=timezone.now() - timedelta(minutes=minutes_ago),
        )
    return run


@pytest.fixture
def disagreements(acme, umbrella):
    runs = {
        "overclaim": judged_run(acme, success=True, verdicts=[("fail", 30, "judge-a")]),
        "underclaim": judged_run(acme, success=False, verdicts=[("pass", 20, "judge-a")]),
        "uncertain": judged_run(acme, success=True, verdicts=[("uncertain", 10, "judge-a")]),
        "agreement": judged_run(acme, success=True, verdicts=[("pass", 5, "judge-a")]),
        "blocked": judged_run(acme, success=True, verdicts=[("fail", 4, "judge-a", True)]),
        # re-judged: its first reading was an overclaim, the latest agrees with the agent
        "superseded": judged_run(acme, success=True, verdicts=[("fail", 50, "judge-a"), ("pass", 3, "judge-b")]),
        "agent_limit": judged_run(acme, success=None, verdicts=[("pass", 2, "judge-a")]),
        "elsewhere": judged_run(umbrella, success=True, verdicts=[("fail", 1, "judge-a")]),
    }
    emit(
        runs["overclaim"],
        "agent.final_view",
        {"url": "http://shop.test/", "screenshot_url": "/runs/x/screenshots/a.png"},
    )
    return runs


def test_the_triage_queue_lists_overclaims_underclaims_and_uncertain_newest_first(api, disagreements):
    items = api.get("/triage").json()["items"]
    assert [(i["run_id"], i["kind"]) for i in items] == [
        (disagreements["agent_limit"].public_id, "underclaim"),
        (disagreements["uncertain"].public_id, "uncertain"),
        (disagreements["underclaim"].public_id, "underclaim"),
        (disagreements["overclaim"].public_id, "overclaim"),
    ]
    overclaim = items[-1]
    assert overclaim["agent_success"] is True and overclaim["verdict"] == "fail"
    assert overclaim["output"] == "The kettle is in the basket." and overclaim["data"] == {"basket": ["Kettle"]}
    assert overclaim["screenshot_url"] == "/runs/x/screenshots/a.png"
    only = api.get("/triage?kind=overclaim").json()["items"]
    assert [i["run_id"] for i in only] == [disagreements["overclaim"].public_id]


def test_the_triage_page_shows_screenshot_output_data_and_reason_side_by_side_and_records_a_truth(
    alice_client, disagreements
):
    page = alice_client.get("/triage/?kind=overclaim")
    html = page.content.decode()
    overclaim = disagreements["overclaim"]
    assert overclaim.public_id in html and disagreements["underclaim"].public_id not in html
    assert 'src="/runs/x/screenshots/a.png"' in html
    assert "The kettle is in the basket." in html and "&quot;Kettle&quot;" in html
    assert "&lt;script&gt;alert(" in html and "<script>alert(" not in html, "the judge's reason is escaped"

    judgment = overclaim.judgments.get()
    response = alice_client.post(
        f"/triage/{judgment.pk}/truth/", {"truth": "judge_right", "note": "Basket was empty.", "next": "/triage/"}
    )
    assert response.status_code == 302 and response["Location"] == "/triage/"
    truth = Truth.objects.get(judgment=judgment)
    assert (truth.value, truth.note, truth.recorded_by.username) == ("judge_right", "Basket was empty.", "alice")
    item = f'id="judgment-{judgment.pk}"'
    assert item not in alice_client.get("/triage/").content.decode(), "resolved items leave the queue"
    assert item in alice_client.get("/triage/?resolved=1").content.decode()


def test_a_truth_is_recorded_and_replaced_through_the_api(api, disagreements):
    judgment = disagreements["underclaim"].judgments.get()
    first = api.post(f"/judgments/{judgment.pk}/truth", {"truth": "agent_right", "note": "first look"})
    assert first.status_code == 200, first.content
    again = api.post(f"/judgments/{judgment.pk}/truth", {"truth": "both_wrong", "note": "second look"})
    assert again.json()["truth"] == "both_wrong"
    assert Truth.objects.get(judgment=judgment).note == "second look"
    assert api.post(f"/judgments/{judgment.pk}/truth", {"truth": "maybe"}).status_code == 400
    resolved = api.get("/triage?include_resolved=true").json()["items"]
    assert any(i["judgment_id"] == judgment.pk and i["truth"]["truth"] == "both_wrong" for i in resolved)


def test_charlie_sees_no_acme_triage_and_cannot_record_its_truth(umbrella_api, charlie_client, disagreements):
    judgment = disagreements["overclaim"].judgments.get()
    assert umbrella_api.post(f"/judgments/{judgment.pk}/truth", {"truth": "agent_right"}).status_code == 404
    assert charlie_client.post(f"/triage/{judgment.pk}/truth/", {"truth": "agent_right"}).status_code == 404
    assert [i["run_id"] for i in umbrella_api.get("/triage").json()["items"]] == [disagreements["elsewhere"].public_id]
    assert not Truth.objects.exists()


def test_calibration_follows_from_the_recorded_truths(api, acme, alice_client):
    # (judge model, verdict, truth, days ago)
    reviewed = [
        ("judge-a", "pass", "judge_right", 0),
        ("judge-a", "pass", "agent_right", 0),  # a false pass
        ("judge-a", "fail", "judge_right", 0),
        ("judge-a", "fail", "judge_right", 8),
        ("judge-a", "fail", "both_wrong", 8),  # a false fail
        ("judge-a", "uncertain", "agent_right", 8),  # counted apart
        ("judge-b", "pass", "judge_right", 0),
        ("judge-b", "fail", "agent_right", 0),  # a false fail
    ]
    for model, verdict, value, days in reviewed:
        run = make_run(acme, status=Run.Status.SUCCEEDED, success=True)
        judgment = Judgment.objects.create(
            run=run, verdict=verdict, reason="r", model=model, judged_at=timezone.now() - timedelta(days=days)
        )
        Truth.objects.create(workspace=acme, judgment=judgment, value=value)

    def expected(rows):
        decided = [r for r in rows if r[1] != "uncertain"]
        right = [r for r in decided if r[2] == "judge_right"]
        passes = [r for r in decided if r[1] == "pass"]
        fails = [r for r in decided if r[1] == "fail"]
        return {
            "reviewed": len(decided),
            "accuracy": len(right) / len(decided),
            "false_pass_rate": sum(r[2] != "judge_right" for r in passes) / len(passes),
            "false_fail_rate": sum(r[2] != "judge_right" for r in fails) / len(fails),
            "uncertain_reviewed": len(rows) - len(decided),
        }

    body = api.get("/calibration").json()
    for name, value in expected(reviewed).items():
        assert body["overall"][name] == pytest.approx(value)
    assert body["overall"]["accuracy"] == pytest.approx(4 / 7)
    by_model = {row["judge_model"]: row for row in body["by_model"]}
    for model in ("judge-a", "judge-b"):
        for name, value in expected([r for r in reviewed if r[0] == model]).items():
            assert by_model[model][name] == pytest.approx(value)
    weeks = {(row["period_start"][:10], row["judge_model"]) for row in body["by_period"]}
    assert len({week for week, _ in weeks}) == 2, "two weeks of judging"
    assert sum(row["reviewed"] for row in body["by_period"]) == 7

    usage = alice_client.get("/usage/").content.decode()
    assert 'id="judge-calibration"' in usage and "judge-b" in usage and "57.1%" in usage


def test_rejudging_a_batch_shows_which_verdicts_changed(api):
    created = api.post("/batches", {"tasks": [{"task": "Buy the kettle."}], "repeats": 3, "concurrency": 3}).json()
    batch = Batch.objects.get(public_id=created["id"])
    runs = list(Run.objects.filter(batch_item__batch=batch).order_by("batch_item__repeat"))
    Run.objects.filter(batch_item__batch=batch).update(
        status=Run.Status.SUCCEEDED, success=True, finished_at=timezone.now()
    )
    early = timezone.now() - timedelta(minutes=5)
    for run, verdict in zip(runs, ["pass", "fail", "fail"], strict=True):
        Judgment.objects.create(run=run, verdict=verdict, reason="first", model="judge-a", judged_at=early)

    response = api.post(f"/batches/{batch.public_id}/rejudge", {"judge_context": ["A kettle in the basket is enough."]})
    assert response.status_code == 202, response.content
    round_ = JudgeRound.objects.get(batch=batch)
    assert (round_.number, round_.judge_context) == (1, ["A kettle in the basket is enough."])
    # the judge's second readings (written here: this test is about the comparison)
    for run, verdict in zip(runs, ["pass", "pass", "fail"], strict=True):
        Judgment.objects.create(run=run, verdict=verdict, reason="second", model="judge-a")

    latest = api.get(f"/batches/{batch.public_id}").json()
    assert latest["round"] == 1
    assert latest["changes"] == [{"run_id": runs[1].public_id, "before": "fail", "after": "pass"}]
    group = latest["groups"][0]
    assert group["pass_at_1"] == pytest.approx(2 / 3) and group["pass_at_1_before"] == pytest.approx(1 / 3)
    assert latest["matrix"]["overclaim"] == 1
    first = api.get(f"/batches/{batch.public_id}?round=0").json()
    assert first["groups"][0]["pass_at_1"] == pytest.approx(1 / 3) and first["matrix"]["overclaim"] == 2
    assert api.get(f"/batches/{batch.public_id}?round=7").status_code == 404


def test_a_batch_with_runs_going_cannot_be_rejudged_yet(api):
    created = api.post("/batches", {"tasks": [{"task": "Buy the kettle."}], "repeats": 2}).json()
    response = api.post(f"/batches/{created['id']}/rejudge", {})
    assert response.status_code == 409
    assert response.json()["error"]["type"] == "conflict"
