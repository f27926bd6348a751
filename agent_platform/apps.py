"""App config for the platform-wide models: workspaces, members, API keys, model requests and prices."""

from django.apps import AppConfig


class AgentPlatformConfig(AppConfig):
    name = "agent_platform"
    verbose_name = "Platform"
