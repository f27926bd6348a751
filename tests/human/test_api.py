"""The person-in-the-loop API on its own (no worker): answers, pauses, resumes and messages, their events, and the
edges: another workspace's run is not_found, an answered or closed input is conflict."""

import pytest

from runs.models import Event, Run, RunInput, RunMessage
from runs.secret_box import unseal_value
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(acme) -> Run:
    return make_run(acme, status=Run.Status.RUNNING)


def ask(run: Run, question: str = "Which colour?", *, secret: bool = False) -> RunInput:
    return RunInput.objects.create(run=run, question=question, secret=secret)


def types(run: Run) -> list[str]:
    return list(Event.objects.filter(run=run).order_by("seq").values_list("type", flat=True))


def test_a_pending_question_shows_on_the_run_and_its_answer_is_recorded(api, running):
    asked = ask(running)

    shown = api.get(f"/runs/{running.public_id}").json()
    assert shown["pending_input"]["id"] == asked.public_id
    assert shown["pending_input"]["question"] == "Which colour?"
    assert shown["pending_input"]["secret"] is False
    assert shown["pending_input"]["asked_at"]
    assert shown["paused"] is False

    answered = api.post(f"/runs/{running.public_id}/input", {"id": asked.public_id, "text": "Blue"})

    assert answered.status_code == 200, answered.content
    assert answered.json()["pending_input"] is None
    asked.refresh_from_db()
    assert (asked.state, asked.answer) == (RunInput.State.ANSWERED, "Blue")
    received = Event.objects.get(run=running, type="run.input_received").payload
    assert received["text"] == "Blue" and received["id"] == asked.public_id


def test_answering_twice_is_conflict(api, running):
    asked = ask(running)
    assert api.post(f"/runs/{running.public_id}/input", {"id": asked.public_id, "text": "Blue"}).status_code == 200

    again = api.post(f"/runs/{running.public_id}/input", {"id": asked.public_id, "text": "Red"})

    assert again.status_code == 409
    assert again.json()["error"]["type"] == "conflict"


def test_a_timed_out_input_takes_no_answer(api, running):
    asked = RunInput.objects.create(run=running, question="Code?", state=RunInput.State.TIMED_OUT)

    assert api.post(f"/runs/{running.public_id}/input", {"id": asked.public_id, "text": "1234"}).status_code == 409


def test_another_workspaces_run_and_another_runs_input_are_not_found(api, umbrella_api, running, acme):
    asked = ask(running)
    other_run = make_run(acme, status=Run.Status.RUNNING)

    foreign = umbrella_api.post(f"/runs/{running.public_id}/input", {"id": asked.public_id, "text": "x"})
    elsewhere = api.post(f"/runs/{other_run.public_id}/input", {"id": asked.public_id, "text": "x"})

    assert foreign.status_code == 404 and elsewhere.status_code == 404
    for path in ("pause", "resume", "messages"):
        assert (
            umbrella_api.post(
                f"/runs/{running.public_id}/{path}", {"text": "x"} if path == "messages" else {}
            ).status_code
            == 404
        )
    asked.refresh_from_db()
    assert asked.state == RunInput.State.PENDING
    assert "run.input_received" not in types(running)


def test_a_secret_answer_is_sealed_at_rest_and_never_in_an_event_or_response(api, running):
    asked = ask(running, "Your 2FA code?", secret=True)

    answered = api.post(f"/runs/{running.public_id}/input", {"id": asked.public_id, "text": "CODE-482913"})

    assert answered.status_code == 200
    assert "CODE-482913" not in answered.content.decode()
    asked.refresh_from_db()
    assert "CODE-482913" not in asked.answer
    assert unseal_value(asked.answer) == "CODE-482913"
    received = Event.objects.get(run=running, type="run.input_received").payload
    assert "text" not in received and received["secret"] is True
    events = api.get(f"/runs/{running.public_id}/events").content.decode()
    assert "CODE-482913" not in events


def test_a_secret_answer_too_short_to_mask_is_refused(api, running):
    asked = ask(running, "PIN?", secret=True)

    refused = api.post(f"/runs/{running.public_id}/input", {"id": asked.public_id, "text": "12"})

    assert refused.status_code == 400
    assert refused.json()["error"]["message"].startswith("text: a secret answer must be 4 to 1000 characters")
    asked.refresh_from_db()
    assert asked.state == RunInput.State.PENDING


def test_pause_then_resume_queues_the_hand_back_note(api, running):
    paused = api.post(f"/runs/{running.public_id}/pause")

    assert paused.status_code == 200 and paused.json()["paused"] is True
    running.refresh_from_db()
    assert running.accepts_control
    assert api.post(f"/runs/{running.public_id}/pause").json()["paused"] is True  # idempotent: one event

    resumed = api.post(f"/runs/{running.public_id}/resume", {"note": "Signed in for you."})

    assert resumed.status_code == 200 and resumed.json()["paused"] is False
    assert types(running) == ["run.paused", "run.resumed"]
    resumed_event = Event.objects.get(run=running, type="run.resumed").payload
    assert resumed_event["note"] == "Signed in for you." and resumed_event["by"].startswith("api key ")
    handback = RunMessage.objects.get(run=running)
    assert (handback.kind, handback.text) == (RunMessage.Kind.HANDBACK, "Signed in for you.")
    running.refresh_from_db()
    assert not running.accepts_control


def test_resuming_a_run_that_is_not_paused_and_pausing_a_finished_run_are_conflict(api, running, acme):
    finished = make_run(acme, status=Run.Status.SUCCEEDED)

    assert api.post(f"/runs/{running.public_id}/resume", {"note": ""}).status_code == 409
    assert api.post(f"/runs/{finished.public_id}/pause").status_code == 409
    assert api.post(f"/runs/{finished.public_id}/messages", {"text": "hello"}).status_code == 409


def test_a_sign_in_by_hand_has_no_agent_to_pause_resume_or_message(api, acme):
    sign_in = make_run(acme, status=Run.Status.RUNNING, kind=Run.Kind.SIGN_IN, model="")

    for path, body in (("pause", None), ("resume", {"note": ""}), ("messages", {"text": "hello"})):
        refused = api.post(f"/runs/{sign_in.public_id}/{path}", body)
        assert refused.status_code == 409, path
        assert "has no agent" in refused.json()["error"]["message"]
    assert not RunMessage.objects.filter(run=sign_in).exists() and types(sign_in) == []


def test_a_queued_message_is_recorded_for_the_next_request(api, running):
    queued = api.post(f"/runs/{running.public_id}/messages", {"text": "Only 2026 invoices."})

    assert queued.status_code == 202
    message = RunMessage.objects.get(run=running)
    assert (message.kind, message.text, message.delivered_at) == (RunMessage.Kind.STEER, "Only 2026 invoices.", None)
    assert Event.objects.get(run=running, type="run.message_queued").payload["text"] == "Only 2026 invoices."


@pytest.mark.parametrize(
    "body", [{}, {"text": ""}, {"text": "   "}, {"text": 5}, {"text": "x" * 10_001}, {"text": "a", "extra": 1}]
)
def test_a_bad_message_is_refused_with_the_envelope(api, running, body):
    refused = api.post(f"/runs/{running.public_id}/messages", body)

    assert refused.status_code in (400, 422)
    assert refused.json()["error"]["type"] == "invalid_request"
    assert not RunMessage.objects.filter(run=running).exists()
