"""The run page's words: notices that wait on something say what they wait on, signals say what ended a run without
a verdict turn, the data panel names the output_schema only where there is one, and headers name the workspace."""

import pytest

from judge.models import Judgment
from runs.models import Run
from runs.presenters import signal_rows
from tests.support.factories import make_run, make_session

pytestmark = pytest.mark.django_db

NO_VERDICT_TURN = {"turns": 2, "max_turns": 30, "verdict_turn": "none", "verdict_followed": None}


def verdict_turn_words(run: Run) -> str:
    return {row["key"]: row["value"] for row in signal_rows(run.signals, run)}["verdict_turn"]


@pytest.mark.parametrize(
    ("status", "error_code", "words"),
    [
        (Run.Status.CANCELLED, Run.ErrorCode.CANCELLED, "none (the run was cancelled)"),
        (Run.Status.FAILED, Run.ErrorCode.COST_LIMIT, "none (the cost cap stopped the run)"),
        (Run.Status.FAILED, Run.ErrorCode.TIMEOUT, "none (the run timed out)"),
        (Run.Status.FAILED, Run.ErrorCode.TASK_FAILED, "none (the agent ended on its own)"),
        (Run.Status.SUCCEEDED, "", "none (the agent ended on its own)"),
        (Run.Status.RUNNING, "", "none so far"),
    ],
)
def test_no_verdict_turn_says_what_ended_the_run(acme, status, error_code, words):
    run = make_run(acme, status=status, error_code=error_code, signals=NO_VERDICT_TURN)
    assert verdict_turn_words(run) == words


def test_the_cost_cap_as_what_brought_the_verdict_turn_reads_in_words(acme):
    run = make_run(acme, status=Run.Status.FAILED, signals={**NO_VERDICT_TURN, "verdict_turn": "budget"})
    assert verdict_turn_words(run) == "the cost cap"


def test_a_cancelled_runs_page_does_not_say_the_agent_ended_on_its_own(alice_client, acme):
    run = make_run(acme, status=Run.Status.CANCELLED, error_code=Run.ErrorCode.CANCELLED, signals=NO_VERDICT_TURN)
    html = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "none (the run was cancelled)" in html and "ended on its own" not in html


def test_the_data_panel_names_the_schema_only_when_the_session_has_one(alice_client, acme):
    plain = make_run(acme, status=Run.Status.SUCCEEDED, success=True, data={"price": 39})
    schema = {"type": "object", "properties": {"price": {"type": "number"}}}
    checked = make_run(
        acme, session=make_session(acme, output_schema=schema), status=Run.Status.SUCCEEDED, data={"price": 39}
    )
    assert "output_schema" not in alice_client.get(f"/runs/{plain.public_id}/summary/").content.decode()
    assert "accepted against the session's output_schema" in (
        alice_client.get(f"/runs/{checked.public_id}/summary/").content.decode()
    )


def test_waiting_notices_carry_what_they_wait_for(alice_client, acme):
    running = make_run(acme, status=Run.Status.RUNNING)
    page = alice_client.post(f"/runs/{running.public_id}/cancel/", follow=True).content.decode()
    assert 'data-until="finished">Cancel requested for' in page

    finished = make_run(acme, status=Run.Status.SUCCEEDED, success=True)
    Judgment.objects.create(run=finished, verdict="pass", reason="fine", model="j")
    page = alice_client.post(f"/runs/{finished.public_id}/rejudge/", {"judge_context": []}, follow=True)
    assert 'data-until="judged">A new judgment was requested' in page.content.decode()


def test_run_session_and_triage_headers_name_the_workspace(alice_client, acme):
    run = make_run(acme)
    for path in (f"/runs/{run.public_id}/", f"/sessions/{run.session.public_id}/", "/sessions/", "/triage/"):
        html = alice_client.get(path).content.decode()
        assert f'<span class="ws-name">{acme.name}</span>' in html, path


def test_data_with_fields_named_after_dict_methods_renders_every_field(alice_client, acme):
    data = {"items": [{"name": "kettle"}], "keys": 2, "values": "euros"}
    run = make_run(acme, status=Run.Status.SUCCEEDED, success=True, data=data)
    response = alice_client.get(f"/runs/{run.public_id}/summary/")
    assert response.status_code == 200
    html = response.content.decode()
    for key in ("items", "keys", "values"):
        assert f'<span class="key">{key}</span>' in html
    assert '<span class="t-string">&quot;euros&quot;</span>' in html
