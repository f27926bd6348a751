"""App config for the platform-wide models: workspaces, members, API keys, model requests and prices."""

from django.apps import AppConfig


class AgentPlatformConfig(AppConfig):
    name = "agent_platform"
    verbose_name = "Platform"

    def ready(self) -> None:
        # Registers the settings checks (pilothouse.E0xx/W0xx) with Django's system check framework.
        from . import checks  # noqa: F401, PLC0415 (Django's place for it: checks register once the app is ready)
