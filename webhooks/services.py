"""Webhook state changes: adding endpoints, recording deliveries of an event, attempting them, resending."""

import http.client
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import InvalidRequest
from agent_platform.lib.timestamps import rfc3339
from agent_platform.models import Workspace

from . import signing
from .models import Attempt, Delivery, Endpoint, EventType
from .policy import address_refusal, allowing_hint

log = logging.getLogger(__name__)

URL_MAX_CHARS = 2000
ENDPOINTS_LIMIT = 20
USER_AGENT = "Pilothouse-Webhooks/1"
ERROR_MAX_CHARS = 500


# --- endpoints -----------------------------------------------------------------------------------------------------


def clean_events(events: object) -> list[str]:
    if not isinstance(events, list) or not events:
        raise InvalidRequest.of_field("events", "must list at least one of run.finished, run.judged, batch.finished")
    cleaned = []
    for index, event in enumerate(events):
        if event not in EventType.values:
            raise InvalidRequest.of_field(f"events[{index}]", "must be run.finished, run.judged or batch.finished")
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


# --- deliveries ----------------------------------------------------------------------------------------------------


def body_of(delivery: Delivery, event_type: str, data: dict) -> str:
    created_at = rfc3339(delivery.created_at, milliseconds=True)
    envelope = {"id": delivery.public_id, "type": event_type, "created_at": created_at, "data": data}
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), default=str)


def enqueue(delivery: Delivery) -> None:
    from .tasks import deliver  # noqa: PLC0415 (lazy: the task module imports this one)

    def send() -> None:
        try:
            deliver.apply_async((delivery.pk, delivery.attempts + 1), queue=settings.WEBHOOK_QUEUE)
        except Exception:
            log.exception("could not enqueue webhook delivery %s", delivery.public_id)

    transaction.on_commit(send)


def record_event(workspace_id: int, event_type: str, data: Callable[[], dict]) -> list[Delivery]:
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


def retry_delay(number: int) -> int:
    """Seconds before attempt number+1: exponential from the base, capped."""
    return min(settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (number - 1), settings.WEBHOOK_RETRY_MAX_SECONDS)


@dataclass(frozen=True)
class Answer:
    """What one attempt got: the response's status code, or no code and why (a transport failure, a refusal)."""

    code: int | None
    error: str = ""


def post(endpoint: Endpoint, delivery: Delivery) -> Answer:
    """POST the signed body once.

    http.client follows no redirect (a redirect is an answer, not a new address that would step around the address
    policy) and reads no proxy from the environment.
    """
    body = delivery.body.encode()
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.EVENT_HEADER: delivery.event_type,
        signing.DELIVERY_HEADER: delivery.public_id,
        signing.TIMESTAMP_HEADER: str(timestamp),
        signing.SIGNATURE_HEADER: signing.signature(endpoint.secret, timestamp, body),
    }
    parts = urlsplit(endpoint.url)
    if parts.hostname is None:  # the address policy refuses such a URL first; never connect to a default host
        return Answer(None, "the URL has no host")
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    connection = connection_class(parts.hostname, parts.port, timeout=settings.WEBHOOK_TIMEOUT_SECONDS)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(64 * 1024)
        return Answer(response.status)
    except (OSError, http.client.HTTPException, ValueError) as error:
        return Answer(None, f"{type(error).__name__}: {error}"[:ERROR_MAX_CHARS])
    finally:
        connection.close()


def attempt(delivery_pk: int, number: int) -> int | None:
    """Make attempt `number` of a delivery; returns the seconds to wait before the next one, or None when done.

    The attempt is claimed by advancing `attempts` from number-1, so a duplicated task message never sends twice.
    """
    claimed = Delivery.objects.filter(pk=delivery_pk, status=Delivery.Status.PENDING, attempts=number - 1).update(
        attempts=number
    )
    if not claimed:
        return None
    delivery = Delivery.objects.select_related("endpoint").get(pk=delivery_pk)
    endpoint = delivery.endpoint
    started = time.monotonic()
    refusal = address_refusal(endpoint.url)
    if refusal is not None:
        answer = Answer(None, f"refused by the address policy before any connection: {refusal}")
    else:
        answer = post(endpoint, delivery)
    duration_ms = int((time.monotonic() - started) * 1000)
    now = timezone.now()
    Attempt.objects.create(
        delivery=delivery,
        number=number,
        attempted_at=now,
        response_code=answer.code,
        error=answer.error,
        duration_ms=duration_ms,
    )
    fields: dict[str, Any] = {"response_code": answer.code, "last_error": answer.error}
    delay = None
    if answer.code is not None and 200 <= answer.code < 300:
        fields.update(status=Delivery.Status.DELIVERED, delivered_at=now, next_attempt_at=None)
    else:
        delay = retry_delay(number)
        window_end = delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SECONDS)
        if refusal is not None or now + timedelta(seconds=delay) > window_end:
            fields.update(status=Delivery.Status.FAILED, next_attempt_at=None)
            delay = None
        else:
            fields["next_attempt_at"] = now + timedelta(seconds=delay)
    Delivery.objects.filter(pk=delivery.pk).update(**fields)
    return delay
