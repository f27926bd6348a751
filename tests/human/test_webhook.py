"""The agent's question goes out as a run.input_requested webhook to endpoints subscribed to it, and only to them."""

import json

import pytest

from runs import human
from runs.models import Run
from tests.support.factories import make_run
from webhooks.models import Delivery, Endpoint


@pytest.mark.django_db(transaction=True)
def test_a_question_is_delivered_to_the_endpoints_subscribed_to_run_input_requested(acme, monkeypatch):
    from webhooks import services

    monkeypatch.setattr(services, "enqueue", lambda delivery: None)  # the delivery row is the subject, not the POST
    listening = Endpoint.objects.create(
        workspace=acme, url="https://hooks.example.com/a", events=["run.input_requested"]
    )
    Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/b", events=["run.finished"])
    run = make_run(acme, status=Run.Status.RUNNING)

    asked = human.ask(run, "Your 2FA code?", secret=True)

    delivery = Delivery.objects.get()
    assert delivery.endpoint == listening and delivery.event_type == "run.input_requested"
    body = json.loads(delivery.body)
    assert body["type"] == "run.input_requested"
    assert body["data"]["run"]["id"] == run.public_id
    assert body["data"]["input"] == {"id": asked.public_id, "question": "Your 2FA code?", "secret": True}


def test_an_endpoint_may_subscribe_to_run_input_requested():
    from webhooks.services import clean_events

    assert clean_events(["run.input_requested", "run.finished"]) == ["run.input_requested", "run.finished"]
