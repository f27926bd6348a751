"""A batch for real: 3 tasks x 2 configurations x 4 runs through the API, the worker, Chromium and the Messages stub
with chosen outcomes, launched under the concurrency limit; its statistics, matrix and batch.finished webhook."""

import json
import re
import threading
from collections import defaultdict

import pytest

from runs.models import Run
from tests.support.judging import judgment_reply
from tests.support.launching import wait_for
from tests.support.replies import done
from tests.support.statistics import matrix_cell, pass_at_k_by_product, wilson_by_hand
from tests.support.webhooks import Receiver, documented_function

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("celery_worker", "transactional_db")]

TASKS = ["Read the heading of the page.", "Find the second link.", "Report the page title."]
MODELS = ["claude-sonnet-4-6", "claude-haiku-4-5"]
# Per (task, configuration): the 4 runs' (agent success, judge verdict, blocked).
OUTCOMES = {
    (0, 0): [(True, "pass", False)] * 4,
    (0, 1): [(True, "pass", False), (True, "fail", False), (False, "fail", False), (False, "pass", False)],
    (1, 0): [(False, "fail", False)] * 4,
    (1, 1): [(True, "pass", False), (True, "pass", False), (True, "uncertain", False), (False, "fail", False)],
    (2, 0): [(True, "fail", False), (True, "fail", False), (True, "pass", False), (False, "fail", False)],
    (2, 1): [(True, "pass", False), (False, "fail", True), (False, "fail", False), (False, "fail", False)],
}
CONCURRENCY = 4


class ScriptedOutcomes:
    """The agent answers done at once, as OUTCOMES says for the n-th run of its task and model, and tags its output;
    the judge reads the tag from the request and answers the verdict chosen for that run."""

    def __init__(self):
        self.lock = threading.Lock()
        self.served: dict[tuple[int, int], int] = defaultdict(int)

    def agent(self, request: dict) -> dict:
        text = json.dumps(request["messages"][0])
        task = next(index for index, task in enumerate(TASKS) if task in text)
        config = MODELS.index(request["model"])
        with self.lock:
            n = self.served[(task, config)]
            self.served[(task, config)] += 1
        success = OUTCOMES[(task, config)][n][0]
        return done(success, f"Outcome tag T{task}C{config}R{n}.")

    def judge(self, request: dict) -> dict:
        task, config, n = map(int, re.search(r"Outcome tag T(\d)C(\d)R(\d)", json.dumps(request)).groups())
        _, verdict, blocked = OUTCOMES[(task, config)][n]
        return judgment_reply(verdict, f"Scripted verdict for T{task}C{config}R{n}.", blocked=blocked)


def test_a_batch_of_3_tasks_2_configurations_4_runs_gives_the_expected_statistics(api, site, messages_stub, settings):
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the webhook receiver's ephemeral port, as the workers'
    outcomes = ScriptedOutcomes()
    messages_stub.set_fallback(outcomes.agent)
    messages_stub.set_fallback(outcomes.judge, queue="judge")
    receiver = Receiver([])
    try:
        hook = api.post("/webhooks/endpoints", {"url": receiver.url, "events": ["batch.finished"]})
        assert hook.status_code == 201, hook.content

        created = api.post(
            "/batches",
            {
                "name": "end to end",
                "tasks": [{"task": task, "start_url": f"{site}/index.html"} for task in TASKS],
                "configs": [{"model": MODELS[0], "max_turns": 5}, {"model": MODELS[1], "max_turns": 5}],
                "repeats": 4,
                "concurrency": CONCURRENCY,
                "pass_k": 2,
            },
        )
        assert created.status_code == 201, created.content
        batch_id = created.json()["id"]
        assert created.json()["counts"] == {"planned": 24, "launched": 4, "finished": 0, "not_launched": 0, "judged": 0}

        def finished_batch():
            body = api.get(f"/batches/{batch_id}").json()
            return body if body["status"] == "finished" else None

        body = wait_for(finished_batch, timeout=300, interval=1, message="the batch to finish")

        # Never more runs of the batch in flight (queued or running) than its concurrency.
        runs = list(Run.objects.filter(batch_item__batch__public_id=batch_id))
        assert len(runs) == 24 and all(run.is_finished for run in runs)
        moments = sorted([(run.created_at, 1) for run in runs] + [(run.finished_at, -1) for run in runs])
        in_flight, peak = 0, 0
        for _, step in moments:
            in_flight += step
            peak = max(peak, in_flight)
        assert peak <= CONCURRENCY

        groups = {(g["task_index"], g["config_index"]): g for g in body["groups"]}
        matrix = dict.fromkeys(body["matrix"], 0)
        for key, outcomes in OUTCOMES.items():
            group = groups[key]
            # a run the judge found blocked by the site is an infrastructure failure, out of every rate
            planned = [outcome for outcome in outcomes if not outcome[2]]
            assert group["infrastructure_failures"] == len(outcomes) - len(planned)
            n = len(planned)
            successes = sum(1 for success, _, _ in planned if success)
            passes = sum(1 for _, verdict, _ in planned if verdict == "pass")
            assert (group["runs"], group["successes"], group["judged"], group["passes"]) == (n, successes, n, passes)
            low, high = wilson_by_hand(successes, n)
            assert group["success_interval"]["low"] == pytest.approx(low, abs=1e-12)
            assert group["success_interval"]["high"] == pytest.approx(high, abs=1e-12)
            assert group["pass_at_1"] == pytest.approx(passes / n)
            assert group["pass_at_k"] == pytest.approx(pass_at_k_by_product(n, passes, 2))
            assert group["flaky"] == (0 < passes < n)
            for success, verdict, blocked in planned:
                matrix[matrix_cell(success, verdict, blocked)] += 1
        assert body["matrix"] == matrix
        assert body["matrix"] == {
            "success_pass": 9,
            "overclaim": 3,
            "underclaim": 1,
            "failure_fail": 9,
            "uncertain": 1,
            "blocked_or_impossible": 0,
        }
        assert [entry["reason"] for entry in body["infrastructure"]] == ["blocked"]

        # batch.finished reaches the endpoint, signed, with the same matrix.
        wait_for(lambda: receiver.requests, timeout=30, message="the batch.finished delivery")
        delivery = receiver.requests[0]
        sent = documented_function("verify")(hook.json()["secret"], delivery["headers"], delivery["body"])
        assert sent is not None, "it verifies with the standardwebhooks library"
        assert sent["type"] == "batch.finished" and sent["data"]["batch"]["id"] == batch_id
        assert sent["data"]["batch"]["matrix"] == matrix
    finally:
        receiver.close()
