"""A judged run gets one judge reading through the real worker: each verdict, the request it reads, its usage."""

from decimal import Decimal

import pytest
from django.conf import settings

from agent_platform.models import ModelRequest
from judge.models import Judgment
from runs.models import Event, Run
from scripted_api.stub import JUDGE_QUEUE
from scripted_api.wire import error_reply, json_reply, text_reply
from tests import messages_stub as stub_fixtures
from tests.support.judging import FINAL_PAGE_TEXT, NOTICE, finished_run, judgment_reply, price_in_force, user_text
from tests.support.launching import wait_for

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def judgment_of(run: Run, count: int = 1, timeout: float = 30) -> Judgment:
    # The run.judged event is written after the Judgment row: wait for it too, so no assertion races the worker.
    wait_for(
        lambda: (
            Judgment.objects.filter(run=run).count() >= count
            and Event.objects.filter(run=run, type="run.judged").count() >= count
        ),
        timeout,
        message=f"{count} judgment(s) of {run}",
    )
    return Judgment.objects.filter(run=run).first()


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"verdict": "pass"}, ("pass", False, False)),
        ({"verdict": "fail"}, ("fail", False, False)),
        ({"verdict": "uncertain"}, ("uncertain", False, False)),
        ({"verdict": "fail", "blocked": True}, ("fail", True, False)),
        ({"verdict": "fail", "impossible": True}, ("fail", False, True)),
    ],
    ids=["pass", "fail", "uncertain", "blocked", "impossible"],
)
def test_each_verdict_is_stored_and_announced_without_touching_the_run(
    messages_stub_server, celery_worker, messages_stub, acme, answer, expected
):
    reason = f"Judged {expected[0]} on the evidence of the final page."
    messages_stub.judge(judgment_reply(reason=reason, **answer))

    run = finished_run(acme)
    judgment = judgment_of(run)

    assert (judgment.verdict, judgment.blocked, judgment.impossible) == expected
    assert judgment.reason == reason
    event = wait_for(lambda: Event.objects.filter(run=run, type="run.judged").first(), message="run.judged")
    assert event.payload == {**judgment.as_dict(), "judgment_id": judgment.pk}
    run.refresh_from_db()
    assert (run.status, run.success, run.output) == (
        Run.Status.SUCCEEDED,
        True,
        "Kettle 24.90, Toaster 39.00, Mixer 89.50",
    )


def test_the_judge_reads_context_first_then_task_verdict_steps_and_final_page(
    messages_stub_server, celery_worker, messages_stub, acme
):
    messages_stub.judge(judgment_reply())
    context = ["The shop has exactly three products.", "Prices are in euros."]

    run = finished_run(acme, judge_context=context, task="List every product of the shop with its price.")
    judgment = judgment_of(run)

    [request] = messages_stub.requests_for(JUDGE_QUEUE)
    # The verdict comes as structured output: no tool, and nothing forced.
    assert "tool_choice" not in request
    assert "tools" not in request
    output_format = request["output_config"]["format"]
    assert output_format["type"] == "json_schema"
    schema = output_format["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["verdict", "reason", "blocked", "impossible"]
    assert schema["properties"]["verdict"]["enum"] == ["pass", "fail", "uncertain"]
    text = user_text(request)
    order = [
        text.index(context[0]),
        text.index(context[1]),
        text.index("List every product of the shop with its price."),
        text.index("Kettle 24.90, Toaster 39.00, Mixer 89.50"),
        text.index("tool_use navigate"),
        text.index(FINAL_PAGE_TEXT),
    ]
    assert order == sorted(order)
    # The trajectory: a long tool output is shortened but its notice kept; errors and violations are shown.
    assert text.count(NOTICE) == 1
    assert "more chars]" in text
    assert "tool_error: output_schema_violation: at $: 'items' is a required property" in text
    assert '"count": 3' in text
    assert judgment.judge_context == context


def test_judge_usage_is_billed_as_judge_and_counted_in_the_run_totals(
    messages_stub_server, celery_worker, messages_stub, acme
):
    price_in_force(settings.JUDGE_MODEL)
    usage = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    messages_stub.judge(
        json_reply({"verdict": "pass", "reason": "ok", "blocked": False, "impossible": False}, usage=usage)
    )

    run = finished_run(acme)
    judgment_of(run)

    [request] = ModelRequest.objects.filter(run=run)
    assert (request.source, request.input_tokens, request.output_tokens) == ("judge", 1200, 80)
    # 1200 input tokens at $3 and 80 output tokens at $15 per million.
    assert request.cost_usd == Decimal("0.0048")
    run.refresh_from_db()
    assert run.usage["requests"] == 1
    assert run.usage["total"] == 1280
    assert run.usage["output"] == 80
    assert run.cost_usd == request.cost_usd
    usage_event = Event.objects.get(run=run, type="agent.usage")
    assert usage_event.payload["source"] == "judge"
    assert usage_event.payload["input_tokens"] == 1200


def test_a_malformed_answer_is_asked_again_once_then_stored_as_uncertain(
    messages_stub_server, celery_worker, messages_stub, acme
):
    messages_stub.judge(
        text_reply("I think it passed."),
        json_reply({"verdict": "maybe", "reason": "Hard to say.", "blocked": False, "impossible": False}),
    )

    run = finished_run(acme)
    judgment = judgment_of(run)

    assert judgment.verdict == Judgment.Verdict.UNCERTAIN
    assert "could not be parsed" in judgment.reason
    assert "'maybe' is not pass, fail or uncertain" in judgment.reason
    _first, second = messages_stub.requests_for(JUDGE_QUEUE)
    assert "could not be used: the answer was neither a JSON object nor a record_judgment call" in user_text(second)
    assert "output_config" in second
    assert ModelRequest.objects.filter(run=run, source="judge").count() == 2
    assert Event.objects.filter(run=run, type="run.judged").count() == 1


def test_a_malformed_answer_followed_by_a_good_one_is_kept(messages_stub_server, celery_worker, messages_stub, acme):
    messages_stub.judge(
        json_reply({"verdict": "pass", "reason": "", "blocked": "no", "impossible": False}),
        judgment_reply("pass", "The three products and prices are on the page."),
    )

    run = finished_run(acme)
    judgment = judgment_of(run)

    assert (judgment.verdict, judgment.reason) == ("pass", "The three products and prices are on the page.")
    assert len(messages_stub.requests_for(JUDGE_QUEUE)) == 2


def test_an_unavailable_judge_model_stores_uncertain_and_still_announces_it(
    messages_stub_server, celery_worker, messages_stub, acme
):
    messages_stub.set_fallback(error_reply(400, "invalid_request_error", "model not found"), queue=JUDGE_QUEUE)

    run = finished_run(acme, status=Run.Status.FAILED)
    judgment = judgment_of(run)

    assert judgment.verdict == Judgment.Verdict.UNCERTAIN
    assert judgment.reason.startswith("The judge model was unavailable")
    assert "HTTP 400" in judgment.reason
    assert Event.objects.filter(run=run, type="run.judged").exists()
    run.refresh_from_db()
    assert (run.status, run.error_code) == (Run.Status.FAILED, Run.ErrorCode.TASK_FAILED)


def test_failed_runs_are_judged_and_cancelled_or_unjudged_runs_are_not(
    messages_stub_server, celery_worker, messages_stub, acme
):
    messages_stub.set_fallback(judgment_reply("fail", "The agent did not find the product."), queue=JUDGE_QUEUE)

    cancelled = finished_run(acme, status=Run.Status.CANCELLED)
    unjudged = finished_run(acme, judge=False)
    failed = finished_run(acme, status=Run.Status.FAILED)
    judgment_of(failed)

    # Only the failed run asked the judge: the other two never enqueued a judgment.
    assert len(messages_stub.requests_for(JUDGE_QUEUE)) == 1
    assert not Judgment.objects.filter(run__in=[cancelled, unjudged]).exists()


def test_a_judge_request_that_would_cross_the_runs_cost_cap_is_not_sent(
    messages_stub_server, celery_worker, messages_stub, acme
):
    # The judge's request at this price is estimated well above a cap of $0.004 (its assumed output alone is $0.015).
    price_in_force(settings.JUDGE_MODEL)
    messages_stub.judge(judgment_reply())

    run = finished_run(acme, max_cost_usd=Decimal("0.004"))
    judgment = judgment_of(run)

    assert messages_stub.requests == []
    assert judgment.verdict == Judgment.Verdict.UNCERTAIN
    assert judgment.reason.startswith("The run was not judged: The judge's request (about $")
    assert "would cross this run's cost cap of $0.004 ($0.0000 spent); it was not sent." in judgment.reason
    event = wait_for(lambda: Event.objects.filter(run=run, type="run.judged").first(), message="run.judged")
    assert event.payload["verdict"] == "uncertain"
    run.refresh_from_db()
    assert (run.cost_usd, run.usage_requests) == (Decimal(0), 0)
    assert not ModelRequest.objects.filter(run=run).exists()
