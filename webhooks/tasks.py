"""Celery tasks of webhooks: one delivery attempt, retried by Celery with exponential backoff for up to 24 hours; and
the beat's sweep that sends again the attempts whose message was lost."""

import logging

from celery import Task, shared_task
from django.conf import settings

from . import sending

log = logging.getLogger(__name__)


@shared_task(name="webhooks.tasks.deliver", bind=True, ignore_result=True, max_retries=None)  # type: ignore[untyped-decorator]  # celery ships no type information
def deliver(self: Task, delivery_id: int, number: int = 1) -> None:
    delay = sending.attempt(delivery_id, number)
    if delay is not None:
        raise self.retry(args=(delivery_id, number + 1), countdown=delay, queue=settings.WEBHOOK_QUEUE)


@shared_task(name="webhooks.tasks.send_overdue", ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def send_overdue() -> list[str]:
    """Celery beat, every minute: the attempt of each overdue delivery (sending.take_overdue) sent again."""
    sent = []
    for delivery in sending.take_overdue():
        deliver.apply_async((delivery.pk, delivery.attempts + 1), queue=settings.WEBHOOK_QUEUE)
        log.warning("webhook delivery %s was overdue: attempt %s sent again", delivery.public_id, delivery.attempts + 1)
        sent.append(delivery.public_id)
    return sent
