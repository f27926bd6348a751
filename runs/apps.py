"""App config for sessions, runs and events."""

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"
