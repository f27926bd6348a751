"""The webhooks app: JSON deliveries signed per Standard Webhooks of run.finished, run.judged and batch.finished."""

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        from . import receivers  # noqa: F401, PLC0415 (lazy: connects the run and batch listeners once the models are ready)
