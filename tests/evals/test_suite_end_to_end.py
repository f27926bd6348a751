"""A WebArena-format suite for real: imported through the API with its placeholder mapped to the test pages, launched
as a batch of two configurations through the worker, Chromium and the Messages stub; the worker reads the program
check's locator on the final page before the browser closes, each run gets its rule score beside its judgment, the
batch is re-judged in key_points mode, and the leaderboard and the agreement with imported labels show both modes."""

import json

import pytest

from evals.models import RuleScore
from runs.models import Event, Run
from scripted_api.stub import system_text
from scripted_api.wire import json_reply
from tests.support.judging import judgment_reply, user_text
from tests.support.launching import wait_for
from tests.support.replies import browser, done

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("celery_worker", "transactional_db")]

NAVIGATES, STAYS = "claude-sonnet-4-6", "claude-haiku-4-5"
ANSWER = "The heading is Second page."


def webarena_file() -> str:
    check = {
        "url": "last",
        "locator": "document.querySelector('h1').outerText",
        "required_contents": {"exact_match": "Second page"},
    }
    configs = [
        {
            "sites": ["shopping"],
            "task_id": 7,
            "intent": "Open the second page of the shop and report its heading.",
            "start_url": "__SHOPPING__/index.html",
            "eval": {
                "eval_types": ["string_match", "url_match", "program_html"],
                "reference_answers": {"must_include": ["Second page"]},
                "reference_url": "__SHOPPING__/second.html",
                "program_html": [check],
            },
        },
        {"task_id": 8, "intent": "Open the project.", "start_url": "__GITLAB__/explore", "eval": {}},
    ]
    return json.dumps(configs, indent=2)


def agent(site: str):
    def reply(request: dict) -> dict:
        # One configuration goes to the second page first; the other claims the answer at once.
        if request["model"] == NAVIGATES and len(request["messages"]) == 1:
            return browser("navigate", url=f"{site}/second.html")
        return done(True, ANSWER)

    return reply


def judge(request: dict) -> dict:
    if "This first step reads only the task" in system_text(request):
        return json_reply({"key_points": ["The second page is open.", "Its heading is reported."]})
    went = "second.html" in user_text(request)
    return judgment_reply("pass" if went else "fail", "Judged on the steps.")


def test_a_webarena_suite_runs_with_two_configurations_rules_and_both_judge_modes(api, site, messages_stub):
    messages_stub.set_fallback(agent(site))
    messages_stub.set_fallback(judge, queue="judge")

    imported = api.post(
        "/suites", {"format": "webarena", "content": webarena_file(), "sites": {"__SHOPPING__": site}, "name": "shop"}
    )
    assert imported.status_code == 201, imported.content
    suite = imported.json()
    assert suite["tasks"] == 1 and [s["external_id"] for s in suite["skipped"]] == ["8"]

    created = api.post(
        f"/suites/{suite['id']}/batches",
        {"configs": [{"model": NAVIGATES, "max_turns": 5}, {"model": STAYS, "max_turns": 5}], "concurrency": 2},
    )
    assert created.status_code == 201, created.content
    batch_id = created.json()["id"]

    def finished_batch():
        body = api.get(f"/batches/{batch_id}").json()
        return body if body["status"] == "finished" else None

    wait_for(finished_batch, timeout=240, interval=1, message="the batch to finish")
    runs = {run.model: run for run in Run.objects.filter(batch_item__batch__public_id=batch_id)}
    assert set(runs) == {NAVIGATES, STAYS}

    # The worker read the locator on the final page before the browser closed; the rules read what it found.
    view = Event.objects.get(run=runs[NAVIGATES], type="agent.final_view").payload
    assert view["reference_texts"] == ["Second page"]
    scores = wait_for(
        lambda: {s.run.model: s for s in RuleScore.objects.select_related("run")} if RuleScore.objects.count() == 2 else None,
        timeout=60,
        message="both rule scores",
    )  # fmt: skip
    assert scores[NAVIGATES].passed is True
    assert [(c["type"], c["passed"]) for c in scores[STAYS].checks] == [
        ("must_include", True),
        ("url_match", False),
        ("program_html", False),
    ]
    assert scores[STAYS].passed is False

    # The same runs judged again in key_points mode: the leaderboard shows each configuration in each mode.
    rejudged = api.post(f"/batches/{batch_id}/rejudge", {"judge_mode": "key_points"})
    assert rejudged.status_code == 202, rejudged.content
    wait_for(
        lambda: all(run.judgments.filter(mode="key_points").exists() for run in runs.values()),
        timeout=60,
        message="the key_points round",
    )
    board = api.get(f"/suites/{suite['id']}/leaderboard").json()["rows"]
    cells = {(row["model"], row["judge_mode"]): row["total"] for row in board}
    assert set(cells) == {(m, mode) for m in (NAVIGATES, STAYS) for mode in ("standard", "key_points")}
    for mode in ("standard", "key_points"):
        assert (cells[(NAVIGATES, mode)]["passes"], cells[(STAYS, mode)]["passes"]) == (1, 0)
        assert cells[(NAVIGATES, mode)]["success_interval"] is not None
        assert cells[(NAVIGATES, mode)]["infrastructure_failures"] == 0
        assert cells[(NAVIGATES, mode)]["cost_per_pass_usd"] is not None

    # People's labels for the runs: agreement and kappa per judge mode.
    labels = "\n".join(
        json.dumps({"run_id": run.public_id, "success": model == NAVIGATES}) for model, run in runs.items()
    )
    assert api.post("/labels", {"content": labels}).json()["imported"] == 2
    raters = api.get(f"/agreement?suite_id={suite['id']}").json()["raters"]
    judges = {r["judge_mode"]: r for r in raters if r["rater"] == "judge"}
    assert set(judges) == {"standard", "key_points"}
    for row in judges.values():
        assert row["percent_agreement"] == 1.0 and row["kappa"] == pytest.approx(1.0)
    claim = next(r for r in raters if r["rater"] == "claim")
    assert claim["matrix"] == {"both_success": 1, "rater_only": 1, "person_only": 0, "both_failure": 0}
