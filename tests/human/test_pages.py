"""The run page's person card and the runs list for a run waiting for a person: the question shown escaped with an
answer box, Take control and Hand back, a message; members only."""

import pytest
from django.utils import timezone

from runs.models import Event, Run, RunInput, RunMessage
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
