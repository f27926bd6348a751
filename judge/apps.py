"""App config for judgments and outcome evaluations: it hands the runtime its outcome evaluator and listens for
finished runs, so runs never imports judge."""

from django.apps import AppConfig


class OutcomeGrader:
    """The runtime's outcome evaluator; judge.outcomes is imported on first use, since it loads the model client,
    which the web process does not need."""

    def has_outcome(self, run) -> bool:
        from .models import Outcome

        return Outcome.objects.filter(run=run).exists()

    def evaluate(self, run, iteration: int, final_view: dict | None, *, done: dict | None):
        from . import outcomes

        return outcomes.evaluate(run, iteration, final_view, done=done)

    def revision_message(self, evaluation) -> str:
        from . import outcomes

        return outcomes.revision_message(evaluation)

    def acknowledgment_message(self, evaluation) -> str:
        from . import outcomes

        return outcomes.acknowledgment_message(evaluation)


def on_run_finished(sender, run, **kwargs) -> None:
    from .services import judge_on_finish

    judge_on_finish(run)


class JudgeConfig(AppConfig):
    name = "judge"

    def ready(self) -> None:
        from runs.agent import evaluation
        from runs.lifecycle import run_finished

        evaluation.register(OutcomeGrader())
        run_finished.connect(on_run_finished, dispatch_uid="judge.judge_on_finish")
