"""App config for judgments and outcome evaluations."""

from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "judge"
