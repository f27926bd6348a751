"""The evals app: batches of runs, their statistics, claim-versus-judge triage and judge calibration."""

from django.apps import AppConfig


class EvalsConfig(AppConfig):
    name = "evals"
    verbose_name = "Evaluations"

    def ready(self) -> None:
        from . import receivers  # noqa: F401, PLC0415 (lazy: connects the run listeners once the models are ready)
