"""App config of the judge: judgments and outcome evaluations of finished runs. Runs announce their end with a signal
(runs.signals.run_finished) and the judge listens; it reads the run's record and writes its own."""

from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "judge"
    label = "judge"
