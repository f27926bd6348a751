"""Celery task of webhooks: one delivery attempt, retried by Celery with exponential backoff for up to 24 hours."""

from celery import Task, shared_task
from django.conf import settings

from . import sending


@shared_task(name="webhooks.tasks.deliver", bind=True, ignore_result=True, max_retries=None)  # type: ignore[untyped-decorator]  # celery ships no type information
def deliver(self: Task, delivery_id: int, number: int = 1) -> None:
    delay = sending.attempt(delivery_id, number)
    if delay is not None:
        raise self.retry(args=(delivery_id, number + 1), countdown=delay, queue=settings.WEBHOOK_QUEUE)
