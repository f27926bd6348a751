"""One outcome evaluation cycle, called as the runtime calls it: each result, and the spec's exact span events."""

from decimal import Decimal

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from agent_platform.models import ModelRequest
from judge.models import Outcome, OutcomeEvaluation
from judge.outcomes import acknowledgment_message, evaluate, revision_message
from runs.models import Event, Run
from scripted_api.stub import GRADER_QUEUE
from scripted_api.wire import error_reply, text_reply
from tests import messages_stub as stub_fixtures
from tests.support.judging import FINAL_PAGE_TEXT, evaluation_reply, finished_run, price_in_force, user_text

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

END_FIELDS = {
    "id",
    "explanation",
    "iteration",
    "outcome_evaluation_start_id",
    "outcome_id",
    "processed_at",
    "result",
    "usage",
}
USAGE_FIELDS = {"cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens", "output_tokens", "speed"}
RUBRIC = "- Lists all three products\n- Each product has its price in euros"
VIEW = {"url": "http://shop.test/", "title": "Acme Shop", "text": FINAL_PAGE_TEXT, "screenshot_url": None}


@pytest.fixture
def model_in_process(settings, messages_stub):
    """This process's model client talks to the stub, without SDK retries (no test here wants them)."""
    settings.ANTHROPIC_BASE_URL = messages_stub.base_url
    settings.ANTHROPIC_API_KEY = "test-key"
    settings.MODEL_MAX_RETRIES = 0
    return messages_stub


def run_with_outcome(workspace, max_iterations: int = 3) -> tuple[Run, Outcome]:
    run = finished_run(workspace, judge=False)
    outcome = Outcome.objects.create(
        run=run, description="A price list of the shop", rubric=RUBRIC, max_iterations=max_iterations
    )
    return run, outcome


def spans(run: Run) -> tuple[Event, Event]:
    start = Event.objects.filter(run=run, type="span.outcome_evaluation_start").latest("seq")
    end = Event.objects.filter(run=run, type="span.outcome_evaluation_end").latest("seq")
    return start, end


def assert_spec_shaped(start: Event, end: Event, outcome: Outcome, evaluation: OutcomeEvaluation, iteration: int):
    assert start.payload == {
        "id": start.public_id,
        "outcome_id": outcome.public_id,
        "iteration": iteration,
        "processed_at": start.payload["processed_at"],
    }
    assert set(end.payload) == END_FIELDS
    assert set(end.payload["usage"]) == USAGE_FIELDS
    assert end.payload["id"] == end.public_id
    assert end.payload["outcome_evaluation_start_id"] == start.public_id
    assert end.payload["outcome_id"] == outcome.public_id
    assert end.payload["iteration"] == iteration
    assert end.payload["processed_at"].endswith("Z")
    assert timezone.datetime.fromisoformat(end.payload["processed_at"]) >= timezone.datetime.fromisoformat(
        start.payload["processed_at"]
    )
    assert (evaluation.start_event_id, evaluation.end_event_id) == (start.public_id, end.public_id)
    assert end.payload["result"] == evaluation.result
    assert end.payload["explanation"] == evaluation.explanation
    assert start.seq < end.seq


@pytest.mark.django_db
def test_satisfied_closes_the_cycle_with_the_graders_usage(model_in_process, acme):
    usage = {"input_tokens": 900, "output_tokens": 40, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    answer = {"result": "satisfied", "explanation": "All three products with prices."}
    model_in_process.grader({**evaluation_reply(**answer), "usage": usage})
    run, outcome = run_with_outcome(acme)

    evaluation = evaluate(run, 0, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 0)
    assert (evaluation.result, evaluation.explanation) == ("satisfied", "All three products with prices.")
    assert end.payload["usage"] == {**usage, "speed": None}
    [request] = ModelRequest.objects.filter(run=run)
    assert (request.source, request.input_tokens, request.output_tokens) == ("judge", 900, 40)
    assert (evaluation.input_tokens, evaluation.output_tokens) == (900, 40)


@pytest.mark.django_db
def test_the_grader_reads_outcome_rubric_deliverables_steps_and_final_view(model_in_process, acme):
    model_in_process.grader(evaluation_reply("satisfied", "ok"))
    run, _outcome = run_with_outcome(acme)

    evaluate(run, 0, VIEW)

    [request] = model_in_process.requests_for(GRADER_QUEUE)
    # The grader's answer comes as structured output: no tool, nothing forced.
    assert "tool_choice" not in request
    assert "tools" not in request
    schema = request["output_config"]["format"]["schema"]
    assert schema["properties"]["result"]["enum"] == ["satisfied", "needs_revision", "failed"]
    text = user_text(request)
    for expected in ("A price list of the shop", RUBRIC, "Kettle 24.90, Toaster 39.00, Mixer 89.50", '"count": 3'):
        assert expected in text
    assert "tool_use navigate" in text
    assert FINAL_PAGE_TEXT in text


@pytest.mark.django_db
def test_needs_revision_below_the_budget_asks_for_a_revision(model_in_process, acme):
    model_in_process.grader(evaluation_reply("needs_revision", "The mixer's price is missing."))
    run, outcome = run_with_outcome(acme, max_iterations=3)

    evaluation = evaluate(run, 1, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 1)
    assert evaluation.result == "needs_revision"
    message = revision_message(evaluation)
    assert message.startswith("Revision requested (iteration 2):")
    assert "The mixer's price is missing." in message


@pytest.mark.django_db
def test_needs_revision_on_the_last_iteration_becomes_max_iterations_reached(model_in_process, acme):
    model_in_process.grader(evaluation_reply("needs_revision", "Prices are still in dollars."))
    run, outcome = run_with_outcome(acme, max_iterations=3)

    evaluation = evaluate(run, 2, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 2)
    assert end.payload["result"] == "max_iterations_reached"
    assert end.payload["explanation"] == "Prices are still in dollars."
    message = acknowledgment_message(evaluation)
    assert "No further evaluation will run" in message
    assert "Prices are still in dollars." in message


@pytest.mark.django_db
def test_failed_when_the_grader_finds_the_rubric_does_not_apply(model_in_process, acme):
    model_in_process.grader(evaluation_reply("failed", "The rubric grades a PDF report; the task yields a list."))
    run, outcome = run_with_outcome(acme)

    evaluation = evaluate(run, 0, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 0)
    assert evaluation.result == "failed"
    assert evaluation.explanation == "The rubric grades a PDF report; the task yields a list."


@pytest.mark.django_db
def test_interrupted_when_the_operator_cancelled_before_the_evaluation(model_in_process, acme):
    run, outcome = run_with_outcome(acme)
    Run.objects.filter(pk=run.pk).update(cancel_requested_at=timezone.now())

    evaluation = evaluate(run, 0, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 0)
    assert evaluation.result == "interrupted"
    assert model_in_process.requests_for(GRADER_QUEUE) == []
    assert end.payload["usage"] == {
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "speed": None,
    }


@pytest.mark.django_db(transaction=True)
def test_interrupted_when_the_operator_cancels_while_the_grader_is_answering(model_in_process, acme):
    run, outcome = run_with_outcome(acme)

    def cancel_then_answer(request):
        # The operator's cancel lands while the grader's request is in flight (from the stub's own thread).
        try:
            Run.objects.filter(pk=run.pk).update(cancel_requested_at=timezone.now())
        finally:
            connection.close()
        return evaluation_reply("satisfied", "Looks complete.")

    model_in_process.grader(cancel_then_answer)

    evaluation = evaluate(run, 0, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 0)
    assert evaluation.result == "interrupted"
    assert "while it was being evaluated" in evaluation.explanation
    # The grader did answer, and what it cost is reported.
    assert end.payload["usage"]["output_tokens"] > 0


@pytest.mark.django_db
def test_an_unusable_grader_answer_is_asked_again_then_the_cycle_fails_saying_why(model_in_process, acme):
    model_in_process.grader(text_reply("Looks good to me."), evaluation_reply("great", "All fine."))
    run, outcome = run_with_outcome(acme)

    evaluation = evaluate(run, 0, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 0)
    assert evaluation.result == "failed"
    assert "'great' is not satisfied, needs_revision or failed" in evaluation.explanation
    assert len(model_in_process.requests_for(GRADER_QUEUE)) == 2
    assert ModelRequest.objects.filter(run=run, source="judge").count() == 2
    input_tokens = sum(ModelRequest.objects.filter(run=run).values_list("input_tokens", flat=True))
    assert end.payload["usage"]["input_tokens"] == input_tokens


@pytest.mark.django_db
def test_an_unavailable_grader_fails_the_cycle_instead_of_leaving_it_open(model_in_process, acme):
    model_in_process.set_fallback(error_reply(529), queue=GRADER_QUEUE)
    run, outcome = run_with_outcome(acme)

    evaluation = evaluate(run, 0, VIEW)

    start, end = spans(run)
    assert_spec_shaped(start, end, outcome, evaluation, 0)
    assert evaluation.result == "failed"
    assert "the grader model was unavailable" in evaluation.explanation
    assert "529" in evaluation.explanation


@pytest.mark.django_db
def test_the_latest_done_call_is_graded_while_the_run_is_still_going(model_in_process, acme):
    model_in_process.grader(evaluation_reply("satisfied", "ok"))
    run, _ = run_with_outcome(acme)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING, output="", data=None)
    run.refresh_from_db()

    evaluate(run, 0, VIEW)

    [request] = model_in_process.requests_for(GRADER_QUEUE)
    assert "Kettle 24.90, Toaster 39.00, Mixer 89.50" in user_text(request)
    assert '"count": 3' in user_text(request)


@pytest.mark.django_db
def test_spans_served_by_the_events_api_carry_the_spec_fields_with_the_envelopes_id_and_time(
    model_in_process, acme, api
):
    model_in_process.grader(evaluation_reply("satisfied", "All three products with prices."))
    run, outcome = run_with_outcome(acme)

    evaluate(run, 0, VIEW)

    served = api.get(f"/runs/{run.public_id}/events?limit=1000").json()["events"]
    start = next(event for event in served if event["type"] == "span.outcome_evaluation_start")
    end = next(event for event in served if event["type"] == "span.outcome_evaluation_end")
    for event in (start, end):
        assert event["data"]["id"] == event["id"]
        assert event["data"]["processed_at"] == event["processed_at"]
    assert set(end["data"]) == END_FIELDS
    assert end["data"]["outcome_evaluation_start_id"] == start["id"]
    assert (end["data"]["result"], end["data"]["outcome_id"]) == ("satisfied", outcome.public_id)
    # the websocket's backlog and live pushes serve the same dicts
    assert Event.objects.get(public_id=end["id"]).as_dict() == end


@pytest.mark.django_db
def test_a_grader_request_that_would_cross_the_runs_cost_cap_is_not_sent(model_in_process, acme):
    price_in_force(settings.JUDGE_MODEL)
    model_in_process.grader(evaluation_reply("satisfied", "All three products with prices."))
    run = finished_run(acme, judge=False, max_cost_usd=Decimal("0.004"))
    outcome = Outcome.objects.create(run=run, description="A price list of the shop", rubric=RUBRIC, max_iterations=3)

    evaluation = evaluate(run, 0, VIEW)

    assert model_in_process.requests == []
    assert evaluation.result == "failed"
    assert evaluation.explanation.startswith("The evaluation could not be completed: the grader's request (about $")
    assert evaluation.explanation.endswith(
        "would cross this run's cost cap of $0.004 ($0.0000 spent); it was not sent."
    )
    assert_spec_shaped(*spans(run), outcome, evaluation, 0)
    run.refresh_from_db()
    assert run.cost_usd == Decimal(0)
    assert not ModelRequest.objects.filter(run=run).exists()
