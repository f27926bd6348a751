"""What the loop needs of an outcome evaluator, the one it calls after an accepted done: judge.outcomes'
OutcomeGrader in a run, another one where a test drives the loop's decisions by hand."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from runs.models import Run


class Evaluation(Protocol):
    """One evaluation cycle's stored result, as the loop reads it."""

    result: str
    iteration: int
    explanation: str


CycleResult = TypeVar("CycleResult", bound=Evaluation)


class OutcomeEvaluator(Protocol[CycleResult]):
    """Generic over the evaluator's own result type, so an evaluator needn't import this module to match it."""

    def has_outcome(self, run: Run) -> bool: ...

    def evaluate(
        self, run: Run, iteration: int, final_view: dict[str, Any] | None, *, done: dict[str, Any] | None
    ) -> CycleResult: ...

    def revision_message(self, evaluation: CycleResult) -> str: ...

    def acknowledgment_message(self, evaluation: CycleResult) -> str: ...


class NoOutcomes:
    """An evaluator for which no run has an outcome: an accepted done ends the run."""

    def has_outcome(self, run: Run) -> bool:
        return False

    def evaluate(
        self, run: Run, iteration: int, final_view: dict[str, Any] | None, *, done: dict[str, Any] | None
    ) -> Evaluation:
        raise RuntimeError("no run has an outcome here")

    def revision_message(self, evaluation: Evaluation) -> str:
        raise RuntimeError("no run has an outcome here")

    def acknowledgment_message(self, evaluation: Evaluation) -> str:
        raise RuntimeError("no run has an outcome here")
