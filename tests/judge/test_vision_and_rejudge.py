"""The judge sees the final viewport only on a vision-capable model, and a finished run can be judged again."""

import base64

import pytest
from django.conf import settings
from django.core.files.storage import default_storage

from agent_platform import ids
from agent_platform.errors import ServiceError
from agent_platform.llm import model_profile
from agent_platform.models import ModelRequest
from judge.models import Judgment
from judge.services import request_rejudge
from runs.lifecycle import mark_started
from runs.models import Event, Run
from runs.screenshots import save_screenshot
from scripted_api.stub import JUDGE_QUEUE
from tests import messages_stub as stub_fixtures
from tests.support.factories import make_run
from tests.support.judging import (
    FINAL_PAGE_TEXT,
    finished_run,
    image_blocks,
    judgment_reply,
    tiny_png,
    user_text,
)
from tests.support.launching import wait_for

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub


@pytest.fixture
def final_screenshot():
    """A viewport PNG saved where the runtime saves them, for a run id the test then creates."""
    run_public_id = ids.run_id()
    png = tiny_png()
    url = save_screenshot(run_public_id, png)
    yield run_public_id, url, png
    default_storage.delete(f"screenshots/{run_public_id}/{url.rsplit('/', 1)[-1]}")


def judged_request(stub, run: Run, count: int = 1) -> dict:
    wait_for(lambda: Judgment.objects.filter(run=run).count() >= count, message=f"{count} judgment(s) of {run}")
    return stub.requests_for(JUDGE_QUEUE)[-1]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_judge_model_whose_profile_takes_images_sees_the_final_viewport(
    messages_stub_server, celery_worker, messages_stub, acme, final_screenshot
):
    run_public_id, url, png = final_screenshot
    assert model_profile(settings.JUDGE_MODEL).image_input  # as the Models API reports it
    messages_stub.judge(judgment_reply())

    run = finished_run(acme, public_id=run_public_id, screenshot_url=url)
    request = judged_request(messages_stub, run)

    [image] = image_blocks(request)
    assert image["source"]["media_type"] == "image/png"
    assert base64.b64decode(image["source"]["data"]) == png
    assert FINAL_PAGE_TEXT in user_text(request)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_without_a_final_view_event_the_last_screenshot_shown_to_the_agent_is_used(
    messages_stub_server, celery_worker, messages_stub, acme, final_screenshot
):
    run_public_id, url, png = final_screenshot
    messages_stub.judge(judgment_reply())

    run = finished_run(acme, public_id=run_public_id, screenshot_url=url, final_view=False)
    request = judged_request(messages_stub, run)

    [image] = image_blocks(request)
    assert base64.b64decode(image["source"]["data"]) == png
    assert "Products listed: Kettle 24.90;" in user_text(request).split("# The final page as the agent last saw it")[1]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_rejudging_keeps_every_judgment_latest_first_each_billed_as_judge(
    messages_stub_server, celery_worker, messages_stub, acme, alice
):
    messages_stub.judge(
        judgment_reply("fail", "The output misses the mixer."),
        judgment_reply("pass", "Given that the mixer is discontinued, the output is complete."),
    )
    run = finished_run(acme, judge_context=["All products must be listed."])
    first = judged_request(messages_stub, run)

    request_rejudge(run, judge_context=["The mixer is discontinued and need not be listed."], requested_by=alice)
    second = judged_request(messages_stub, run, count=2)

    latest, earlier = Judgment.objects.filter(run=run)
    assert (latest.verdict, latest.requested_by, latest.judge_context) == (
        "pass",
        alice,
        ["The mixer is discontinued and need not be listed."],
    )
    assert (earlier.verdict, earlier.requested_by, earlier.judge_context) == (
        "fail",
        None,
        ["All products must be listed."],
    )
    assert "All products must be listed." in user_text(first)
    assert "The mixer is discontinued" in user_text(second)
    assert "All products must be listed." not in user_text(second)
    assert ModelRequest.objects.filter(run=run, source="judge").count() == 2
    run.refresh_from_db()
    assert run.usage_requests == 2
    assert [e.payload["verdict"] for e in Event.objects.filter(run=run, type="run.judged")] == ["fail", "pass"]
    # Re-judging never reopens or rewrites the run.
    assert (run.status, run.success) == (Run.Status.SUCCEEDED, True)


@pytest.mark.django_db
def test_rejudge_refuses_too_many_or_too_long_statements(acme, alice):
    run = finished_run(acme, judge=False)

    with pytest.raises(ServiceError) as too_many:
        request_rejudge(run, judge_context=[f"statement {n}" for n in range(9)], requested_by=alice)
    with pytest.raises(ServiceError) as too_long:
        request_rejudge(run, judge_context=["ok", "x" * 501], requested_by=alice)

    assert (too_many.value.code, too_many.value.field) == ("invalid_request", "judge_context")
    assert "at most 8" in too_many.value.message
    assert (too_long.value.code, too_long.value.field) == ("invalid_request", "judge_context[1]")
    assert "the limit is 500" in too_long.value.message


@pytest.mark.django_db
def test_rejudge_refuses_a_run_that_has_not_finished(acme, alice):
    run = make_run(acme, judge=True)
    mark_started(run, "tests")

    with pytest.raises(ServiceError) as refused:
        request_rejudge(run, judge_context=[], requested_by=alice)

    assert refused.value.code == "conflict"
    assert "only a finished run can be judged again" in refused.value.message
    assert not Judgment.objects.filter(run=run).exists()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_rejudging_without_judge_context_reads_the_runs_own(messages_stub_server, celery_worker, messages_stub, acme):
    messages_stub.set_fallback(judgment_reply("pass", "Complete."), queue=JUDGE_QUEUE)
    run = finished_run(acme, judge_context=["Prices are in euros."])
    judged_request(messages_stub, run)

    request_rejudge(run, judge_context=None, requested_by=None)
    again = judged_request(messages_stub, run, count=2)

    assert "Prices are in euros." in user_text(again)
    assert Judgment.objects.filter(run=run).first().judge_context == ["Prices are in euros."]
