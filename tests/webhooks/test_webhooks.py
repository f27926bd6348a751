"""Webhooks: Standard Webhooks deliveries to a receiver in the test (500, then a retry by the real worker) verified
with the standardwebhooks library as documented, resending, the settings page, internal addresses refused."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.lifecycle import finish, mark_started
from runs.models import Run
from tests.support.factories import make_run
from tests.support.launching import wait_for
from tests.support.webhooks import Receiver, documented_function
from tests.support.workers import WorkerProcess, worker_environment
from webhooks import sending, signing, tasks
from webhooks.models import Attempt, Delivery, Endpoint, signing_secret

QUEUE = "webhook-tests"


@pytest.fixture(scope="module")
def webhook_worker(request, django_db_setup, django_db_blocker, clean_broker, tmp_path_factory):
    """A worker on a queue of its own whose retries wait 1 s, 2 s, ... instead of 30 s, 60 s, ..."""
    with django_db_blocker.unblock():
        env = worker_environment({"WEBHOOK_QUEUE": QUEUE, "WEBHOOK_RETRY_BASE_SECONDS": "1"})
    worker = WorkerProcess(env, tmp_path_factory.mktemp("webhook-worker") / "worker.log", queues=QUEUE).start()
    yield worker
    worker.stop()


@pytest.mark.worker
@pytest.mark.usefixtures("transactional_db")
def test_a_delivery_answered_500_is_retried_with_its_webhook_id_and_verifies_with_standardwebhooks(
    webhook_worker, settings, acme, api, alice_client
):
    settings.WEBHOOK_QUEUE = QUEUE
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the receiver listens on an ephemeral port of this host
    receiver = Receiver([500])
    try:
        created = api.post("/webhooks/endpoints", {"url": receiver.url, "events": ["run.finished"]})
        assert created.status_code == 201, created.content
        secret = created.json()["secret"]
        assert secret.startswith("whsec_") and created.json()["signature_scheme"] == "standard"
        assert "secret" not in api.get("/webhooks/endpoints").json()["endpoints"][0], "the secret is shown once"

        run = make_run(acme, judge_context=["The basket must hold a kettle."], secrets={"PASSWORD": "hunter2-x"})
        mark_started(run, "tests")
        finish(run, Run.Status.SUCCEEDED, success=True, output="Done.", data={"items": 1})

        wait_for(lambda: len(receiver.requests) >= 2, timeout=30, message="the delivery and its retry")
        first, second = receiver.requests[:2]
        assert second["at"] - first["at"] >= 0.9, "the retry waits for its backoff"
        verify = documented_function("verify")
        body = json.loads(second["body"])
        for request in (first, second):
            assert verify(secret, request["headers"], request["body"]) == body, "each attempt verifies"
        assert first["headers"]["webhook-id"] == second["headers"]["webhook-id"] == body["id"], "the idempotency key"
        assert first["headers"]["Pilothouse-Event"] == "run.finished"
        assert "Pilothouse-Signature" not in first["headers"], "a new endpoint's deliveries use Standard Webhooks only"

        assert body["type"] == "run.finished"
        assert body["data"]["run"]["id"] == run.public_id and body["data"]["run"]["status"] == "succeeded"
        assert body["data"]["run"]["data"] == {"items": 1}
        raw = second["body"].decode()
        assert "judge_context" not in raw and "kettle" not in raw and "hunter2" not in raw and "secret" not in raw

        # A tampered body, another secret, a malformed signature and a captured request sent 10 minutes later fail.
        assert verify(secret, second["headers"], second["body"].replace(b"succeeded", b"failed")) is None
        assert verify(signing_secret(), second["headers"], second["body"]) is None
        assert verify(secret, {**second["headers"], "webhook-signature": "v1"}, second["body"]) is None
        captured_at = int(second["headers"]["webhook-timestamp"]) - 600
        captured = {
            "webhook-id": body["id"],
            "webhook-timestamp": str(captured_at),
            "webhook-signature": signing.standard_signature(secret, body["id"], captured_at, second["body"]),
        }
        assert verify(secret, captured, second["body"]) is None

        delivery = wait_for(
            lambda: Delivery.objects.filter(status=Delivery.Status.DELIVERED).first(), message="delivered"
        )
        assert delivery.attempts == 2 and delivery.response_code == 200
        assert list(Attempt.objects.filter(delivery=delivery).values_list("response_code", flat=True)) == [500, 200]
        listed = api.get(f"/webhooks/endpoints/{created.json()['id']}/deliveries").json()["deliveries"]
        assert [a["response_code"] for a in listed[0]["attempt_log"]] == [500, 200]

        page = alice_client.get("/settings/webhooks/").content.decode()
        assert delivery.public_id in page and "500</span> → <span" in page and "Resend" in page

        resent = api.post(f"/webhooks/deliveries/{delivery.public_id}/resend")
        assert resent.status_code == 202 and resent.json()["resend_of"] == delivery.public_id
        wait_for(lambda: len(receiver.requests) >= 3, timeout=30, message="the resent delivery")
        third = receiver.requests[2]
        resent_body = verify(secret, third["headers"], third["body"])
        assert resent_body["id"] == third["headers"]["webhook-id"] == resent.json()["id"] != delivery.public_id
        assert resent_body["data"] == body["data"]
    finally:
        receiver.close()


@pytest.mark.worker
@pytest.mark.usefixtures("transactional_db")
def test_a_delivery_whose_message_was_lost_is_sent_by_the_overdue_sweep_once(webhook_worker, settings, acme, api):
    settings.WEBHOOK_QUEUE = QUEUE
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]
    receiver = Receiver([])
    try:
        created = api.post("/webhooks/endpoints", {"url": receiver.url, "events": ["run.finished"]})
        endpoint = Endpoint.objects.get(public_id=created.json()["id"])
        due = timezone.now() - timedelta(seconds=settings.WEBHOOK_OVERDUE_SECONDS + 60)
        # As a Redis restart leaves them: a delivery whose first message was lost, one whose retry was lost (its
        # first attempt made), and one with an attempt in flight (claimed: its lease runs), none with a message.
        lost = Delivery.objects.create(endpoint=endpoint, event_type="run.finished", body="{}", next_attempt_at=due)
        retry = Delivery.objects.create(
            endpoint=endpoint, event_type="run.finished", body="{}", attempts=1, next_attempt_at=due
        )
        lease = timezone.now() + timedelta(seconds=sending.attempt_lease_seconds())
        in_flight = Delivery.objects.create(
            endpoint=endpoint, event_type="run.finished", body="{}", attempts=1, next_attempt_at=lease
        )

        assert sorted(tasks.send_overdue()) == sorted([lost.public_id, retry.public_id])
        assert tasks.send_overdue() == [], "sent again only a period later, not on every pass"
        # Each send is counted on its row before it goes out: once both rows are delivered, their attempts say how
        # many sends there were, so a double send shows in the count rather than in a wait that might end too soon.
        for delivery, attempts in ((lost, 1), (retry, 2)):
            delivered = wait_for(
                lambda delivery=delivery: Delivery.objects.filter(pk=delivery.pk, status="delivered").first(),
                message=f"{delivery.public_id} delivered",
            )
            assert delivered.attempts == attempts
        assert sorted(request["headers"]["webhook-id"] for request in receiver.requests) == sorted(
            [lost.public_id, retry.public_id]
        )
        in_flight.refresh_from_db()
        assert in_flight.status == Delivery.Status.PENDING and in_flight.next_attempt_at == lease
    finally:
        receiver.close()


@pytest.mark.django_db
def test_an_endpoint_on_the_cloud_metadata_address_is_refused(api, alice_client):
    response = api.post(
        "/webhooks/endpoints", {"url": "http://169.254.169.254/latest/meta-data", "events": ["run.finished"]}
    )
    assert response.status_code == 400
    assert "cloud metadata" in response.json()["error"]["message"]
    page = alice_client.post("/settings/webhooks/endpoints/", {"url": "http://10.0.0.7/hook", "events": ["run.judged"]})
    assert page.status_code == 400 and "private address" in page.content.decode()
    assert not Endpoint.objects.exists()


@pytest.mark.django_db
def test_a_delivery_to_an_internal_address_is_refused_by_policy_before_any_connection(acme):
    # An endpoint that predates the policy (written directly): the attempt must still refuse it, sending nothing.
    endpoint = Endpoint.objects.create(workspace=acme, url="http://169.254.169.254/hook", events=["run.finished"])
    delivery = Delivery.objects.create(endpoint=endpoint, event_type="run.finished", body="{}")
    assert sending.attempt(delivery.pk, 1) is None, "no retry is scheduled"
    delivery.refresh_from_db()
    attempt = delivery.attempt_log.get()
    assert delivery.status == Delivery.Status.FAILED and attempt.response_code is None
    assert attempt.error.startswith("refused by the address policy before any connection")
    assert attempt.duration_ms < 1000


@pytest.mark.django_db
def test_retries_back_off_exponentially_within_a_day(settings):
    assert [sending.retry_delay(n) for n in range(1, 9)] == [30, 60, 120, 240, 480, 960, 1800, 1800]
    schedule, elapsed = [], 0
    while elapsed + sending.retry_delay(len(schedule) + 1) <= settings.WEBHOOK_RETRY_WINDOW_SECONDS:
        elapsed += sending.retry_delay(len(schedule) + 1)
        schedule.append(elapsed)
    assert 23 * 3600 < schedule[-1] <= 24 * 3600, "retries go on for (nearly) 24 hours"


@pytest.mark.django_db
def test_charlie_sees_no_acme_endpoint_or_delivery(api, umbrella_api, charlie_client, acme):
    endpoint = Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/", events=["run.judged"])
    delivery = Delivery.objects.create(endpoint=endpoint, event_type="run.judged", body='{"data": {}}')
    assert umbrella_api.get("/webhooks/endpoints").json()["endpoints"] == []
    assert umbrella_api.get(f"/webhooks/endpoints/{endpoint.public_id}/deliveries").status_code == 404
    assert umbrella_api.post(f"/webhooks/deliveries/{delivery.public_id}/resend").status_code == 404
    assert charlie_client.post(f"/settings/webhooks/deliveries/{delivery.public_id}/resend/").status_code == 404
    assert delivery.public_id not in charlie_client.get("/settings/webhooks/").content.decode()
    assert Delivery.objects.count() == 1


@pytest.mark.django_db
def test_run_judged_becomes_a_delivery_only_for_endpoints_subscribed_to_it(
    acme, umbrella, settings, django_capture_on_commit_callbacks
):
    from judge.models import Judgment
    from runs.events import emit

    settings.WEBHOOK_QUEUE = "webhook-tests-unconsumed"  # this test reads the recorded body; nothing is sent
    judged = Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/a", events=["run.judged"])
    Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/b", events=["run.finished"])
    Endpoint.objects.create(workspace=umbrella, url="https://hooks.example.com/c", events=["run.judged"])
    run = make_run(acme, judge=True, judge_context=["Only the kettle counts."], status=Run.Status.SUCCEEDED)
    judgment = Judgment.objects.create(run=run, verdict="fail", reason="No kettle.", model="judge-a")
    with django_capture_on_commit_callbacks(execute=True):
        emit(run, "run.judged", {**judgment.as_dict(), "judgment_id": judgment.pk})
    delivery = Delivery.objects.get()
    assert delivery.endpoint == judged and delivery.event_type == "run.judged"
    body = json.loads(delivery.body)
    assert body["id"] == delivery.public_id and body["type"] == "run.judged"
    assert body["data"]["judgment"]["verdict"] == "fail" and body["data"]["judgment"]["judge_model"] == "judge-a"
    assert body["data"]["run"]["id"] == run.public_id
    assert "judge_context" not in delivery.body and "Only the kettle" not in delivery.body


@pytest.mark.django_db
def test_the_settings_page_links_to_webhooks_and_an_owner_adds_an_endpoint_there(alice_client, settings):
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1:9"]  # the one private destination allowed, port included
    settings_page = alice_client.get("/settings/").content.decode()
    assert 'href="/settings/webhooks/"' in settings_page and "<title>Settings · Pilothouse</title>" in settings_page
    response = alice_client.post(
        "/settings/webhooks/endpoints/", {"url": "http://127.0.0.1:9/p", "events": ["batch.finished"]}
    )
    assert response.status_code == 200
    endpoint = Endpoint.objects.get()
    assert endpoint.events == ["batch.finished"]
    assert endpoint.secret in response.content.decode(), "the secret is shown on the creating response"
    assert endpoint.secret not in alice_client.get("/settings/webhooks/").content.decode(), "and never again"
