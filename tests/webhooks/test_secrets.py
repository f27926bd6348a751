"""Webhook secrets: Standard Webhooks signatures (the spec's test vector), endpoints with a legacy secret that keep
their Pilothouse-Signature, rotation to a whsec_ secret with a grace where both sign, and who may rotate."""

import base64
import json
import secrets
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from standardwebhooks import Webhook

from tests.support.clients import client_for
from tests.support.webhooks import Receiver, documented_function
from webhooks import sending, services, signing
from webhooks.models import Delivery, Endpoint, SecretScheme, signing_secret

# The example of the Standard Webhooks specification (and of its libraries' tests).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SPEC_TIMESTAMP = 1614265330
SPEC_BODY = b'{"test": 2432232314}'
SPEC_SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def legacy_secret() -> str:
    """A secret as endpoints were given before Standard Webhooks: whsec_ and url-safe base64 without padding."""
    return "whsec_" + secrets.token_urlsafe(32)


@pytest.fixture
def receiver(settings):
    settings.BROWSER_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]  # the receiver listens on an ephemeral port of this host
    receiver = Receiver([])
    yield receiver
    receiver.close()


def deliver_now(endpoint: Endpoint, receiver: Receiver) -> dict:
    """One real attempt of a new run.finished delivery to the endpoint; the request the receiver got."""
    delivery = Delivery(endpoint=endpoint, event_type="run.finished")
    delivery.body = services.body_of(delivery, "run.finished", {"run": {"id": "run_1", "status": "succeeded"}})
    delivery.save()
    assert sending.attempt(delivery.pk, 1) is None, "answered 200: delivered, nothing to retry"
    assert Delivery.objects.get(pk=delivery.pk).status == Delivery.Status.DELIVERED
    request = receiver.requests[-1]
    assert request["headers"]["webhook-id"] == delivery.public_id
    return request


def test_our_signature_is_the_specifications_example_and_the_library_verifies_it():
    assert signing.standard_signature(SPEC_SECRET, SPEC_ID, SPEC_TIMESTAMP, SPEC_BODY) == SPEC_SIGNATURE
    signed_at = datetime.fromtimestamp(SPEC_TIMESTAMP, tz=UTC)
    assert Webhook(SPEC_SECRET).sign(SPEC_ID, signed_at, SPEC_BODY.decode()) == SPEC_SIGNATURE


def test_a_new_secret_is_whsec_and_32_bytes_of_standard_base64_and_a_malformed_one_is_refused():
    secret = signing_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:], validate=True)) == 32
    assert signing.secret_key(secret) == base64.b64decode(secret[6:])
    with pytest.raises(ValueError, match="starts with whsec_"):
        signing.secret_key("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    with pytest.raises(ValueError, match="standard base64"):
        signing.secret_key("whsec_not-base64_at-all")


@pytest.mark.django_db
def test_an_endpoint_with_a_legacy_secret_keeps_its_signature_until_rotated_then_gets_both_for_a_grace(
    acme, alice, alice_client, receiver
):
    old_secret = legacy_secret()
    endpoint = Endpoint.objects.create(
        workspace=acme, url=receiver.url, events=["run.finished"], secret=old_secret, secret_scheme=SecretScheme.LEGACY
    )
    verify, verify_legacy = documented_function("verify"), documented_function("verify_legacy")

    before = deliver_now(endpoint, receiver)
    assert verify_legacy(old_secret, before["headers"], before["body"], set()), "the receiver verifies as before"
    assert before["headers"]["Pilothouse-Delivery"] == before["headers"]["webhook-id"]
    assert "webhook-signature" not in before["headers"], "a legacy secret is not a Standard Webhooks key"
    page = alice_client.get("/settings/webhooks/").content.decode()
    assert "legacy Pilothouse-Signature" in page and "Rotate secret" in page and old_secret not in page

    rotated = alice_client.post(f"/settings/webhooks/endpoints/{endpoint.public_id}/rotate/")
    endpoint.refresh_from_db()
    new_secret = endpoint.secret
    assert rotated.status_code == 200 and endpoint.secret_scheme == SecretScheme.STANDARD
    assert new_secret != old_secret and new_secret in rotated.content.decode(), "the new secret is shown once"
    assert old_secret not in rotated.content.decode()
    page = alice_client.get("/settings/webhooks/").content.decode()
    assert new_secret not in page and "previous secret signs too until" in page

    during = deliver_now(endpoint, receiver)
    assert verify_legacy(old_secret, during["headers"], during["body"], set()), "the old receiver still verifies"
    assert verify(new_secret, during["headers"], during["body"]) == json.loads(during["body"]), "so does the new"
    assert len(during["headers"]["webhook-signature"].split(" ")) == 1, "the legacy secret signs only its own header"

    Endpoint.objects.filter(pk=endpoint.pk).update(retiring_until=timezone.now() - timedelta(seconds=1))
    endpoint.refresh_from_db()
    after = deliver_now(endpoint, receiver)
    assert "Pilothouse-Signature" not in after["headers"], "after the grace only the new secret signs"
    assert verify(new_secret, after["headers"], after["body"]) == json.loads(after["body"])
    assert "previous secret signs too" not in alice_client.get("/settings/webhooks/").content.decode()


@pytest.mark.django_db
def test_rotating_a_standard_secret_through_the_api_signs_with_both_secrets_during_the_grace(api, receiver):
    created = api.post("/webhooks/endpoints", {"url": receiver.url, "events": ["run.finished"]}).json()
    assert created["previous_secret_signs_until"] is None
    rotated = api.post(f"/webhooks/endpoints/{created['id']}/rotate-secret")
    assert rotated.status_code == 200, rotated.content
    old_secret, new_secret = created["secret"], rotated.json()["secret"]
    assert new_secret.startswith("whsec_") and new_secret != old_secret
    grace_end = datetime.fromisoformat(rotated.json()["previous_secret_signs_until"])
    assert timedelta(hours=23) < grace_end - timezone.now() <= services.ROTATION_GRACE
    listed = api.get("/webhooks/endpoints").json()["endpoints"][0]
    assert "secret" not in listed and listed["signature_scheme"] == "standard"

    request = deliver_now(Endpoint.objects.get(public_id=created["id"]), receiver)
    assert len(request["headers"]["webhook-signature"].split(" ")) == 2
    assert "Pilothouse-Signature" not in request["headers"]
    verify = documented_function("verify")
    for secret in (old_secret, new_secret):
        assert verify(secret, request["headers"], request["body"]) == json.loads(request["body"])
    assert verify(signing_secret(), request["headers"], request["body"]) is None

    # A second rotation during the grace: the secret just replaced signs beside the newest; the first one no more.
    newest = api.post(f"/webhooks/endpoints/{created['id']}/rotate-secret").json()["secret"]
    request = deliver_now(Endpoint.objects.get(public_id=created["id"]), receiver)
    assert verify(newest, request["headers"], request["body"]) is not None
    assert verify(new_secret, request["headers"], request["body"]) is not None
    assert verify(old_secret, request["headers"], request["body"]) is None


@pytest.mark.django_db
def test_only_an_owner_of_the_endpoints_workspace_rotates_its_secret(acme, bob, charlie_client, umbrella_api):
    endpoint = Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/", events=["run.judged"])
    secret = endpoint.secret
    path = f"/settings/webhooks/endpoints/{endpoint.public_id}/rotate/"
    assert charlie_client.post(path).status_code == 404, "a member of another workspace does not see it"
    assert umbrella_api.post(f"/webhooks/endpoints/{endpoint.public_id}/rotate-secret").status_code == 404
    bob_client = client_for(bob)
    assert bob_client.post(path).status_code == 403, "a member who is not an owner"
    assert "Rotate secret" not in bob_client.get("/settings/webhooks/").content.decode()
    endpoint.refresh_from_db()
    assert endpoint.secret == secret and not endpoint.retiring_secret


@pytest.mark.django_db(transaction=True)
def test_endpoints_that_existed_before_the_migration_keep_their_secret_as_legacy(acme):
    executor = MigrationExecutor(connection)
    executor.migrate([("webhooks", "0001_webhooks")])
    old_endpoint_model = executor.loader.project_state([("webhooks", "0001_webhooks")]).apps.get_model(
        "webhooks", "Endpoint"
    )
    old_secret = legacy_secret()
    old_endpoint_model.objects.create(
        workspace_id=acme.pk, url="https://hooks.example.com/", events=["run.finished"], secret=old_secret
    )
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
    endpoint = Endpoint.objects.get()
    assert (endpoint.secret, endpoint.secret_scheme) == (old_secret, SecretScheme.LEGACY)
    assert Endpoint.objects.create(workspace=acme, url="https://a.example.com/").secret_scheme == SecretScheme.STANDARD
