"""Outcome cycles and the judge through the real worker, runtime loop and Chromium: revisions, the acknowledgment
turn, an interrupt, and judge_context never reaching the agent."""

import json

import pytest
from django.db import connection
from django.utils import timezone

from judge.models import Judgment, OutcomeEvaluation
from runs.launch import launch_run
from runs.models import Event, Run
from scripted_api.stub import AGENT_QUEUE, GRADER_QUEUE, JUDGE_QUEUE
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support.judging import evaluation_reply, judgment_reply, user_text
from tests.support.launching import wait_for

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RUBRIC = "- Names the page's heading\n- Says what the page reports"


def navigate(url: str) -> dict:
    return tool_use_reply("navigate", {"url": url}, toolset_name="browser", text="Opening the page.")


def done(output: str, success: bool = True) -> dict:
    return tool_use_reply("done", {"success": success, "output": output})


def finished(run: Run, timeout: float = 90) -> Run:
    def ended():
        run.refresh_from_db()
        return run.is_finished

    wait_for(ended, timeout, message=f"{run} to finish")
    return run


def cycles(run: Run) -> list[tuple[int, str]]:
    return [
        (e.payload["iteration"], e.payload["result"])
        for e in Event.objects.filter(run=run, type="span.outcome_evaluation_end")
    ]


def test_two_revisions_then_satisfied_in_the_same_browser(
    messages_stub_server, celery_worker, messages_stub, acme, site
):
    messages_stub.agent(
        navigate(f"{site}/index.html"),
        done("The page says Fixture home."),
        navigate(f"{site}/second.html"),
        done("Fixture home, then the second page."),
        done("Heading: Second page. It reports: You reached the second page."),
    )
    messages_stub.grader(
        evaluation_reply("needs_revision", "The heading named is not the final page's."),
        evaluation_reply("needs_revision", "It does not say what the page reports."),
        evaluation_reply("satisfied", "Heading and report both named."),
    )

    run = launch_run(
        acme,
        task="Go to the second page and report it.",
        start_url=f"{site}/index.html",
        outcome={"description": "A report of the second page", "rubric": RUBRIC, "max_iterations": 3},
    ).run
    finished(run)

    assert (run.status, run.success) == (Run.Status.SUCCEEDED, True)
    assert run.output == "Heading: Second page. It reports: You reached the second page."
    assert cycles(run) == [(0, "needs_revision"), (1, "needs_revision"), (2, "satisfied")]
    starts = list(Event.objects.filter(run=run, type="span.outcome_evaluation_start"))
    ends = list(Event.objects.filter(run=run, type="span.outcome_evaluation_end"))
    assert [e.payload["outcome_evaluation_start_id"] for e in ends] == [s.public_id for s in starts]
    assert [e.result for e in OutcomeEvaluation.objects.filter(outcome__run=run)] == [
        "needs_revision",
        "needs_revision",
        "satisfied",
    ]
    agent_requests = messages_stub.requests_for(AGENT_QUEUE)
    assert "Revision requested (iteration 1):" in user_text(agent_requests[2])
    assert "The heading named is not the final page's." in user_text(agent_requests[2])
    assert "Revision requested (iteration 2):" in user_text(agent_requests[4])
    # The revision navigated on in the same browser: the last grader read the second page.
    last_grading = user_text(messages_stub.requests_for(GRADER_QUEUE)[-1])
    assert "You reached the second page." in last_grading.split("# The final page as the agent last saw it")[1]


def test_max_iterations_reached_allows_one_acknowledgment_turn(
    messages_stub_server, celery_worker, messages_stub, acme, site
):
    messages_stub.agent(
        done("First attempt."),
        done("Second attempt."),
        done("Acknowledged: the report still lacks what the page says."),
    )
    messages_stub.grader(
        evaluation_reply("needs_revision", "Missing what the page reports."),
        evaluation_reply("needs_revision", "Still missing what the page reports."),
    )

    run = launch_run(
        acme,
        task="Report the page.",
        start_url=f"{site}/second.html",
        outcome={"description": "A report", "rubric": RUBRIC, "max_iterations": 2},
    ).run
    finished(run)

    assert cycles(run) == [(0, "needs_revision"), (1, "max_iterations_reached")]
    assert len(messages_stub.requests_for(GRADER_QUEUE)) == 2
    acknowledgment = messages_stub.requests_for(AGENT_QUEUE)[-1]
    assert "tool_choice" not in acknowledgment  # asked for in a user message, never forced
    assert "Evaluation budget exhausted (max_iterations_reached after iteration 1)" in user_text(acknowledgment)
    assert (run.status, run.output) == (
        Run.Status.SUCCEEDED,
        "Acknowledged: the report still lacks what the page says.",
    )


def test_a_cancel_during_the_evaluation_interrupts_it_and_no_cycle_follows(
    messages_stub_server, celery_worker, messages_stub, acme, site
):
    holder: dict[str, Run] = {}

    def cancel_then_answer(request):
        try:
            Run.objects.filter(pk=holder["run"].pk).update(cancel_requested_at=timezone.now())
        finally:
            connection.close()
        return evaluation_reply("needs_revision", "Missing what the page reports.")

    messages_stub.agent(done("A first report."))
    messages_stub.grader(cancel_then_answer)

    run = launch_run(
        acme,
        task="Report the page.",
        start_url=f"{site}/second.html",
        outcome={"description": "A report", "rubric": RUBRIC, "max_iterations": 3},
    ).run
    holder["run"] = run
    finished(run)

    assert cycles(run) == [(0, "interrupted")]
    assert (run.status, run.error_code) == (Run.Status.CANCELLED, Run.ErrorCode.CANCELLED)
    assert len(messages_stub.requests_for(AGENT_QUEUE)) == 1


def test_judge_context_reaches_the_judge_and_never_the_agent(
    messages_stub_server, celery_worker, messages_stub, acme, site
):
    secret = "JUDGE-ONLY: the second page is the right answer (ref 7f3k)."
    messages_stub.agent(navigate(f"{site}/second.html"), done("The second page says: You reached the second page."))
    messages_stub.judge(judgment_reply("pass", "The output quotes the second page."))

    run = launch_run(
        acme,
        task="Open the second page and quote it.",
        start_url=f"{site}/index.html",
        judge=True,
        judge_context=[secret],
    ).run
    finished(run)
    wait_for(lambda: Judgment.objects.filter(run=run).exists(), message="the judgment")

    agent_requests = messages_stub.requests_for(AGENT_QUEUE)
    assert len(agent_requests) == 2
    for request in agent_requests:
        assert "7f3k" not in json.dumps(request)
    [judge_request] = messages_stub.requests_for(JUDGE_QUEUE)
    assert secret in user_text(judge_request)
    # The judge read the runtime's own final view of the page.
    final_view = Event.objects.get(run=run, type="agent.final_view").payload
    assert final_view["url"].endswith("/second.html")
    assert "You reached the second page." in user_text(judge_request)
    assert Judgment.objects.get(run=run).verdict == "pass"


def test_a_judged_run_on_sonnet_5_5_succeeds_and_is_judged_with_no_forced_tool(
    messages_stub_server, celery_worker, messages_stub, acme, site
):
    messages_stub.agent(navigate(f"{site}/second.html"), done("The second page says: You reached the second page."))
    messages_stub.judge(judgment_reply("pass", "The output quotes the second page."))

    run = launch_run(
        acme,
        task="Open the second page and quote it.",
        start_url=f"{site}/index.html",
        model="claude-sonnet-5-5",
        judge=True,
    ).run
    finished(run)
    wait_for(lambda: Judgment.objects.filter(run=run).exists(), message="the judgment")

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert Judgment.objects.get(run=run).verdict == "pass"
    requests = messages_stub.requests
    assert {request["model"] for request in requests} >= {"claude-sonnet-5-5"}
    assert all((request.get("tool_choice") or {}).get("type") not in ("tool", "any") for request in requests)
    [judge_request] = messages_stub.requests_for(JUDGE_QUEUE)
    assert judge_request["output_config"]["format"]["type"] == "json_schema"
