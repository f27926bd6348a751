"""Webhook state changes: adding endpoints, rotating their secrets, recording deliveries of an event, resending."""

import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import InvalidRequest
from agent_platform.lib.timestamps import rfc3339
from agent_platform.models import Workspace

from .models import Delivery, Endpoint, EventType, SecretScheme, signing_secret
from .policy import address_refusal, allowing_hint
from .tasks import deliver

log = logging.getLogger(__name__)

URL_MAX_CHARS = 2000
ENDPOINTS_LIMIT = 20
# How long the secret replaced by a rotation keeps signing beside the new one: a day to deploy the new secret.
ROTATION_GRACE = timedelta(hours=24)


# --- endpoints -----------------------------------------------------------------------------------------------------


def clean_events(events: object) -> list[str]:
    if not isinstance(events, list) or not events:
        raise InvalidRequest.of_field("events", "must list at least one of " + ", ".join(EventType.values))
    cleaned = []
    for index, event in enumerate(events):
        if event not in EventType.values:
            raise InvalidRequest.of_field(f"events[{index}]", "must be one of " + ", ".join(EventType.values))
        if event not in cleaned:
            cleaned.append(event)
    return cleaned


def create_endpoint(workspace: Workspace, *, url: object, events: object, created_by: User | None = None) -> Endpoint:
    """Add an endpoint; a URL the address policy refuses (internal addresses) is refused here, before any request."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidRequest.of_field("url", "is required")
    url = url.strip()
    if len(url) > URL_MAX_CHARS:
        raise InvalidRequest.of_field("url", f"is longer than {URL_MAX_CHARS} characters")
    refusal = address_refusal(url)
    if refusal is not None:
        hint = allowing_hint(url)
        raise InvalidRequest.of_field("url", f"is refused: {refusal}" + (f"; {hint}" if hint else ""))
    events = clean_events(events)
    if Endpoint.objects.for_workspace(workspace).count() >= ENDPOINTS_LIMIT:
        raise InvalidRequest.of_field("url", f"a workspace has at most {ENDPOINTS_LIMIT} endpoints")
    return Endpoint.objects.create(workspace=workspace, url=url, events=events, created_by=created_by)


def delete_endpoint(endpoint: Endpoint) -> None:
    endpoint.delete()


def rotate_secret(endpoint: Endpoint) -> Endpoint:
    """Give the endpoint a new Standard Webhooks secret; the one it replaces signs beside it for ROTATION_GRACE.

    A legacy secret's grace keeps Pilothouse-Signature coming, so a receiver still on the old scheme goes on
    verifying until it switches to the new secret and the standardwebhooks library. A rotation during a grace ends
    the older grace: only the secret just replaced keeps signing.
    """
    with transaction.atomic():
        endpoint = Endpoint.objects.select_for_update().get(pk=endpoint.pk)
        endpoint.retiring_secret = endpoint.secret
        endpoint.retiring_secret_scheme = endpoint.secret_scheme
        endpoint.retiring_until = timezone.now() + ROTATION_GRACE
        endpoint.secret = signing_secret()
        endpoint.secret_scheme = SecretScheme.STANDARD
        endpoint.save(
            update_fields=["secret", "secret_scheme", "retiring_secret", "retiring_secret_scheme", "retiring_until"]
        )
    return endpoint


# --- deliveries ----------------------------------------------------------------------------------------------------


def body_of(delivery: Delivery, event_type: str, data: dict[str, Any]) -> str:
    created_at = rfc3339(delivery.created_at, milliseconds=True)
    envelope = {"id": delivery.public_id, "type": event_type, "created_at": created_at, "data": data}
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), default=str)


def enqueue(delivery: Delivery) -> None:
    def send() -> None:
        try:
            deliver.apply_async((delivery.pk, delivery.attempts + 1), queue=settings.WEBHOOK_QUEUE)
        except Exception:
            log.exception("could not enqueue webhook delivery %s", delivery.public_id)

    transaction.on_commit(send)


def record_event(workspace_id: int, event_type: str, data: Callable[[], dict[str, Any]]) -> list[Delivery]:
    """A delivery of the event to each active endpoint of the workspace subscribed to it, sent once committed.

    `data` is called only when some endpoint listens, so events nobody subscribed to cost one query.
    """
    endpoints = [e for e in Endpoint.objects.filter(workspace_id=workspace_id).active() if e.subscribes_to(event_type)]
    if not endpoints:
        return []
    payload = data()
    deliveries = []
    with transaction.atomic():
        for endpoint in endpoints:
            delivery = Delivery(endpoint=endpoint, event_type=event_type, next_attempt_at=timezone.now())
            delivery.body = body_of(delivery, event_type, payload)
            delivery.save()
            enqueue(delivery)
            deliveries.append(delivery)
    return deliveries


def resend(delivery: Delivery) -> Delivery:
    """Send the same event again as a new delivery (its own id, timestamp and retries)."""
    data = json.loads(delivery.body)["data"]
    with transaction.atomic():
        copy = Delivery(endpoint=delivery.endpoint, event_type=delivery.event_type, resend_of=delivery)
        copy.next_attempt_at = copy.created_at
        copy.body = body_of(copy, delivery.event_type, data)
        copy.save()
        enqueue(copy)
    return copy
