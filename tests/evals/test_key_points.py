"""The key_points judge mode: key points written from the task alone first, then a verdict from the steps and
screenshots that never sees the agent's claim or output (checked in the requests the strict stub received); the mode
and key points recorded on the judgment, the run's own mode taken from its launch, and the standard mode unchanged."""

import json

import pytest

from judge.judging import judge
from judge.models import Judgment
from scripted_api.stub import JUDGE_QUEUE
from scripted_api.wire import json_reply
from tests import messages_stub as stub_fixtures
from tests.support.judging import judgment_reply, user_text
from tests.support.suites import CLAIM, claiming_run

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

pytestmark = pytest.mark.django_db

KEY_POINTS = ["The second page is open.", "Its heading is reported."]
DATA_TOKEN = "DATA-5150"


def test_a_key_points_judgment_never_sees_the_agents_claim_or_output(acme, messages_stub):
    messages_stub.judge(json_reply({"key_points": KEY_POINTS}), judgment_reply("fail", "The heading was not shown."))
    run = claiming_run(acme, data={"token": DATA_TOKEN})

    judgment = judge(run, mode="key_points")

    assert (judgment.mode, judgment.key_points, judgment.verdict) == ("key_points", KEY_POINTS, "fail")
    first, second = messages_stub.requests_for(JUDGE_QUEUE)
    # first the task alone: no step of the run yet
    first_text = user_text(first)
    assert run.task in first_text and "navigate" not in first_text and "Second page opened." not in first_text
    # then the evidence, with the key points, and nothing the agent said of itself
    sent = json.dumps(second)
    assert "The second page is open." in sent and "navigate" in sent and "Second page opened." in sent
    for claim in (CLAIM, DATA_TOKEN, '\\"success\\": true', "The agent's verdict", "I believe that"):
        assert claim not in sent, claim
    assert "CLAIM-7731" not in json.dumps(first)


def test_the_standard_mode_still_reads_the_claim(acme, messages_stub):
    messages_stub.judge(judgment_reply("pass"))
    run = claiming_run(acme)
    judgment = judge(run)
    assert (judgment.mode, judgment.key_points) == ("standard", [])
    [request] = messages_stub.requests_for(JUDGE_QUEUE)
    assert CLAIM in user_text(request)


def test_a_run_launched_in_key_points_mode_is_judged_in_it(acme, messages_stub):
    messages_stub.judge(json_reply({"key_points": KEY_POINTS}), judgment_reply("pass"))
    run = claiming_run(acme, metadata={"judge_mode": "key_points"})
    assert judge(run).mode == "key_points"
    assert len(messages_stub.requests_for(JUDGE_QUEUE)) == 2


def test_unusable_key_points_twice_give_an_uncertain_judgment(acme, messages_stub):
    messages_stub.judge(json_reply({"key_points": []}), json_reply({"points": "none"}))
    judgment = judge(claiming_run(acme), mode="key_points")
    assert judgment.verdict == "uncertain" and "key points could not be parsed" in judgment.reason
    assert judgment.mode == "key_points"


def test_the_judgments_api_says_each_readings_mode_and_key_points(api, acme):
    run = claiming_run(acme)
    Judgment.objects.create(run=run, verdict="pass", reason="r", model="j", mode="key_points", key_points=KEY_POINTS)
    [listed] = api.get(f"/runs/{run.public_id}/judgments").json()["judgments"]
    assert (listed["mode"], listed["key_points"]) == ("key_points", KEY_POINTS)
    response = api.post(f"/runs/{run.public_id}/rejudge", {"judge_mode": "webjudge"})
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request"
