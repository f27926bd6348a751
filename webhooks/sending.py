"""Sending a webhook delivery: one signed POST per attempt, its answer recorded, the next attempt's delay decided."""

import http.client
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from . import signing
from .models import Attempt, Delivery, Endpoint
from .policy import address_refusal

USER_AGENT = "Pilothouse-Webhooks/1"
ERROR_MAX_CHARS = 500


def retry_delay(number: int) -> int:
    """Seconds before attempt number+1: exponential from the base, capped."""
    delay: int = min(settings.WEBHOOK_RETRY_BASE_SECONDS * 2 ** (number - 1), settings.WEBHOOK_RETRY_MAX_SECONDS)
    return delay


@dataclass(frozen=True)
class Answer:
    """What one attempt got: the response's status code, or no code and why (a transport failure, a refusal)."""

    code: int | None
    error: str = ""


def post(endpoint: Endpoint, delivery: Delivery) -> Answer:
    """POST the signed body once (each attempt is signed anew, with its own timestamp).

    http.client follows no redirect (a redirect is an answer, not a new address that would step around the address
    policy) and reads no proxy from the environment.
    """
    body = delivery.body.encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        signing.EVENT_HEADER: delivery.event_type,
        # The delivery's id is the message id: the same on every retry, so receivers deduplicate on it.
        **signing.signed_headers(endpoint, delivery.public_id, body, timezone.now()),
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


def attempt_lease_seconds() -> int:
    """The longest an attempt can take: connecting and reading each within WEBHOOK_TIMEOUT_SECONDS, and a margin."""
    return 2 * settings.WEBHOOK_TIMEOUT_SECONDS + 30


def attempt(delivery_pk: int, number: int) -> int | None:
    """Make attempt `number` of a delivery; returns the seconds to wait before the next one, or None when done.

    The attempt is claimed by advancing `attempts` from number-1, so a duplicated task message never sends twice; the
    claim also leases the delivery (next_attempt_at past the attempt's longest time), so the overdue sweep
    (services.send_overdue) never sends a message for an attempt still in flight.
    """
    lease = timezone.now() + timedelta(seconds=attempt_lease_seconds())
    claimed = Delivery.objects.filter(pk=delivery_pk, status=Delivery.Status.PENDING, attempts=number - 1).update(
        attempts=number, next_attempt_at=lease
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


def take_overdue(overdue_for: timedelta | None = None, *, batch: int = 500) -> list[Delivery]:
    """The pending deliveries whose next attempt is overdue by WEBHOOK_OVERDUE_SECONDS, taken to be sent again: their
    message was lost (a Redis restart takes the queued ones and the retries waiting out their backoff). Sending again
    is safe if it was not: an attempt is claimed by its number, so a second message for it sends nothing, and an
    attempt in flight holds a lease on next_attempt_at. Each taken is pushed forward to now, so a message lost again
    is sent again a period later, not on every pass. Oldest due first."""
    overdue_for = timedelta(seconds=settings.WEBHOOK_OVERDUE_SECONDS) if overdue_for is None else overdue_for
    now = timezone.now()
    late = Delivery.objects.filter(status=Delivery.Status.PENDING, next_attempt_at__lt=now - overdue_for)
    taken = []
    for delivery in late.order_by("next_attempt_at")[:batch]:
        # conditional: an attempt that claimed it meanwhile moved next_attempt_at, and keeps it
        if Delivery.objects.filter(pk=delivery.pk, next_attempt_at=delivery.next_attempt_at).update(
            next_attempt_at=now
        ):
            taken.append(delivery)
    return taken
