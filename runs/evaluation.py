"""The outcome evaluator the loop calls after an accepted done: registered by the app that grades outcomes, so the
runtime never imports it (the judge app builds on runs, not the other way round)."""

from __future__ import annotations

from typing import Any, Protocol

from runs.models import Run


class Evaluation(Protocol):
    """One evaluation cycle's stored result, as the loop reads it."""

    result: str
    iteration: int
    explanation: str


class OutcomeEvaluator(Protocol):
    def has_outcome(self, run: Run) -> bool: ...

    def evaluate(
        self, run: Run, iteration: int, final_view: dict[str, Any] | None, *, done: dict[str, Any] | None
    ) -> Evaluation: ...

    def revision_message(self, evaluation: Evaluation) -> str: ...

    def acknowledgment_message(self, evaluation: Evaluation) -> str: ...


class NoOutcomes:
    """Without a registered evaluator no run has an outcome: an accepted done ends the run."""

    def has_outcome(self, run: Run) -> bool:
        return False

    def evaluate(
        self, run: Run, iteration: int, final_view: dict[str, Any] | None, *, done: dict[str, Any] | None
    ) -> Evaluation:
        raise RuntimeError("no outcome evaluator is registered")

    def revision_message(self, evaluation: Evaluation) -> str:
        raise RuntimeError("no outcome evaluator is registered")

    def acknowledgment_message(self, evaluation: Evaluation) -> str:
        raise RuntimeError("no outcome evaluator is registered")


_registered: OutcomeEvaluator = NoOutcomes()


def register(evaluator: OutcomeEvaluator) -> None:
    """Called once from the grading app's AppConfig.ready."""
    global _registered
    _registered = evaluator


def evaluator() -> OutcomeEvaluator:
    return _registered
