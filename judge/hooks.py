"""What the judge app plugs into runs, which never imports it: the outcome evaluator the agent loop calls, the outcome
rubric a launch asks for, and the judgment of a finished run. Connected from JudgeConfig.ready."""

from typing import Any

from runs.evaluation import Evaluation, register
from runs.judging_hooks import outcome_requested
from runs.lifecycle import run_finished
from runs.models import Run

from . import outcomes
from .models import Outcome, OutcomeEvaluation
from .services import judge_on_finish


class OutcomeGrader:
    """The runtime's outcome evaluator (judge.outcomes asks the grader)."""

    def has_outcome(self, run: Run) -> bool:
        return Outcome.objects.filter(run=run).exists()

    def evaluate(
        self, run: Run, iteration: int, final_view: dict[str, Any] | None, *, done: dict[str, Any] | None
    ) -> OutcomeEvaluation:
        return outcomes.evaluate(run, iteration, final_view, done=done)

    def revision_message(self, evaluation: Evaluation) -> str:
        assert isinstance(evaluation, OutcomeEvaluation)
        return outcomes.revision_message(evaluation)

    def acknowledgment_message(self, evaluation: Evaluation) -> str:
        assert isinstance(evaluation, OutcomeEvaluation)
        return outcomes.acknowledgment_message(evaluation)


def store_outcome(sender: type[Run], *, run: Run, outcome: dict[str, Any], **kwargs: Any) -> None:
    """The rubric a launch asked for, stored in the launch's transaction (runs.judging_hooks.outcome_requested)."""
    Outcome.objects.create(run=run, **outcome)


def judge_finished_run(sender: type[Run], *, run: Run, **kwargs: Any) -> None:
    judge_on_finish(run)


def connect() -> None:
    """Plug the judge into runs; called once, from JudgeConfig.ready."""
    register(OutcomeGrader())
    outcome_requested.connect(store_outcome, dispatch_uid="judge.store_outcome")
    run_finished.connect(judge_finished_run, dispatch_uid="judge.judge_on_finish")
