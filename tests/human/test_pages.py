"""The run page's person card and the runs list for a run waiting for a person: the question shown escaped with an
answer box, Take control and Hand back, a message; members only."""

import pytest
from django.utils import timezone

from runs.models import Event, Run, RunInput, RunMessage
from runs.secret_box import seal
from tests.support.canaries import HOSTILE
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(acme) -> Run:
    return make_run(acme, status=Run.Status.RUNNING)


def test_the_run_page_shows_the_question_escaped_with_an_answer_box_and_the_list_marks_the_run(alice_client, running):
    asked = RunInput.objects.create(run=running, question=f"Which one? {HOSTILE}", secret=True)

    page = alice_client.get(f"/runs/{running.public_id}/").content.decode()
    row = alice_client.get("/").content.decode()

    assert HOSTILE not in page
    assert "Which one? &lt;script&gt;" in page
    assert f'value="{asked.public_id}"' in page and 'type="password" id="answer-text"' in page
    assert "Take control" in page
    assert "waiting for a person" in row


def test_the_runs_list_marks_a_paused_run_and_forgets_it_once_handed_back(alice_client, running):
    assert "waiting for a person" not in alice_client.get("/").content.decode()
    Run.objects.filter(pk=running.pk).update(paused_at=timezone.now())
    assert "A person has control" in alice_client.get("/").content.decode()
    Run.objects.filter(pk=running.pk).update(paused_at=None)
    assert "waiting for a person" not in alice_client.get("/").content.decode()


def test_a_member_answers_takes_control_hands_back_and_messages_from_the_page(alice_client, running):
    asked = RunInput.objects.create(run=running, question="Colour?")

    alice_client.post(f"/runs/{running.public_id}/answer/", {"id": asked.public_id, "text": "Green"})
    alice_client.post(f"/runs/{running.public_id}/pause/")
    running.refresh_from_db()
    paused_page = alice_client.get(f"/runs/{running.public_id}/").content.decode()
    alice_client.post(f"/runs/{running.public_id}/resume/", {"note": "Done by hand."})
    alice_client.post(f"/runs/{running.public_id}/message/", {"text": "Hurry."})

    asked.refresh_from_db()
    assert asked.answer == "Green" and asked.answered_by == "alice"
    assert running.accepts_control and "Hand back" in paused_page
    assert list(RunMessage.objects.filter(run=running).values_list("kind", "text")) == [
        ("handback", "Done by hand."),
        ("steer", "Hurry."),
    ]
    assert list(Event.objects.filter(run=running).values_list("type", flat=True)) == [
        "run.input_received",
        "run.paused",
        "run.resumed",
        "run.message_queued",
    ]


def test_taking_control_of_a_finished_run_is_refused_in_a_sentence(alice_client, acme):
    ended = make_run(acme, status=Run.Status.SUCCEEDED, success=True, finished_at=timezone.now())

    page = alice_client.post(f"/runs/{ended.public_id}/pause/", follow=True).content.decode()

    assert "The run has succeeded; only a running run can be paused." in page
    assert "invalid_request" not in page and "conflict:" not in page
    assert 'id="pause-form"' not in page and 'id="message-form"' not in page


def test_a_finished_run_that_made_no_model_request_does_not_wait_for_one(alice_client, acme):
    ended = make_run(acme, status=Run.Status.SUCCEEDED, success=True, finished_at=timezone.now())

    page = alice_client.get(f"/runs/{ended.public_id}/").content.decode()

    assert "No model requests: the run made none." in page and "No model requests yet" not in page


def test_a_message_naming_a_secret_is_masked_in_its_event(alice_client, acme):
    running = make_run(acme, status=Run.Status.RUNNING, secrets=seal({"SHOP_CODE": "canary-code-4411"}))

    alice_client.post(f"/runs/{running.public_id}/message/", {"text": "Type canary-code-4411 into the box."})

    queued = Event.objects.get(run=running, type="run.message_queued")
    assert queued.payload["text"] == "Type {{secret:SHOP_CODE}} into the box."
    assert "canary-code-4411" not in str(queued.payload)


def test_another_workspaces_member_is_refused_everything(charlie_client, running):
    asked = RunInput.objects.create(run=running, question="Colour?")
    Run.objects.filter(pk=running.pk).update(paused_at=timezone.now())

    for path, body in [
        ("person/", None),
        ("answer/", {"id": asked.public_id, "text": "x"}),
        ("pause/", {}),
        ("resume/", {"note": "x"}),
        ("message/", {"text": "x"}),
    ]:
        response = (
            charlie_client.get(f"/runs/{running.public_id}/{path}")
            if body is None
            else charlie_client.post(f"/runs/{running.public_id}/{path}", body)
        )
        assert response.status_code == 404, path
    asked.refresh_from_db()
    assert asked.state == RunInput.State.PENDING
    assert not Event.objects.filter(run=running).exists()
