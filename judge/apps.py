"""App config for judgments and outcome evaluations: it plugs the judge into runs (the outcome evaluator, the outcome a
launch asks for, the judgment of finished runs), so runs never imports judge."""

from django.apps import AppConfig


class JudgeConfig(AppConfig):
    name = "judge"

    def ready(self) -> None:
        from . import hooks  # noqa: PLC0415 (hooks imports models, which load only once the app registry is ready)

        hooks.connect()
