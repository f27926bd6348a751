"""App config for sessions, runs and events."""

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        # Registers the run settings' checks (pilothouse.E003, W001) with Django's system check framework.
        from . import checks  # noqa: F401, PLC0415 (lazy: the checks read the launch, which needs the app registry)
