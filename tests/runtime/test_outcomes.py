"""Outcome evaluation inside the agent loop: a revision sends the agent back to work, the budget's end asks once more."""

import pytest

from judge.models import Outcome, OutcomeEvaluation
from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support import workers
from tests.support.factories import make_run
from tests.support.judging import evaluation_reply
from tests.support.launching import enqueue, events, finished
from tests.support.replies import browser, done

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("runtime_worker", "transactional_db")]


def run_with_outcome(acme, site, max_iterations: int) -> Run:
    run = make_run(acme, start_url=f"{site}/runtime_shop.html", max_turns=3)
    Outcome.objects.create(
        run=run,
        description="Every product with its price.",
        rubric="- Lists the Kettle, the Toaster and the Mixer\n- Each with its price",
        max_iterations=max_iterations,
    )
    return enqueue(run)


def test_needs_revision_sends_the_agent_back_with_a_fresh_budget_and_the_next_done_is_evaluated(
    acme, site, messages_stub
):
    messages_stub.agent(
        browser("get_page_text"),
        browser("read_page"),
        done(True, "Kettle 24.90"),
        browser("get_page_text"),
        browser("read_page"),
        browser("find", query="Mixer"),  # a third action turn: the budget of 3 started afresh
        done(True, "Kettle 24.90, Toaster 39.00, Mixer 89.50"),
    )
    messages_stub.grader(
        evaluation_reply("needs_revision", "The Toaster and the Mixer are missing."),
        evaluation_reply("satisfied", "All three products with prices."),
    )
    run = run_with_outcome(acme, site, max_iterations=3)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.output == "Kettle 24.90, Toaster 39.00, Mixer 89.50"
    evaluations = list(OutcomeEvaluation.objects.filter(outcome__run=run).order_by("iteration"))
    assert [(e.iteration, e.result) for e in evaluations] == [(0, "needs_revision"), (1, "satisfied")]
    agent_requests = messages_stub.requests_for("agent")
    revision = agent_requests[3]["messages"][-1]["content"][-1]["text"]
    assert revision.startswith("Revision requested (iteration 1)")
    assert "The Toaster and the Mixer are missing." in revision
    # without a fresh budget the request after the third action turn overall would have been the verdict turn
    assert all("tool_choice" not in request for request in agent_requests)
    assert all("verdict turn" not in str(request["messages"][-1]) for request in agent_requests[:6])
    assert "This is your verdict turn" in agent_requests[6]["messages"][-1]["content"][-1]["text"]
    assert run.signals["verdict_turn"] == "cap"
    assert run.signals["turns"] == 5
    types = [event.type for event in events(run)]
    assert types.count("span.outcome_evaluation_start") == 2
    assert types.index("span.outcome_evaluation_end") < types.index("agent.final_view") < types.index("run.finished")


def test_max_iterations_reached_gives_one_acknowledgment_turn_then_the_last_verdict_stands(acme, site, messages_stub):
    messages_stub.agent(
        done(True, "Kettle 24.90"),
        done(True, "Kettle 24.90; I could not list the other products."),
    )
    messages_stub.grader(evaluation_reply("needs_revision", "The Toaster and the Mixer are missing."))
    run = run_with_outcome(acme, site, max_iterations=1)

    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED
    assert run.output == "Kettle 24.90; I could not list the other products."
    evaluation = OutcomeEvaluation.objects.get(outcome__run=run)
    assert evaluation.result == "max_iterations_reached"
    acknowledgment = messages_stub.requests_for("agent")[1]
    assert "tool_choice" not in acknowledgment  # asked for in a user message, never forced
    assert "Evaluation budget exhausted" in acknowledgment["messages"][-1]["content"][-1]["text"]
    assert len(messages_stub.requests_for("grader")) == 1
