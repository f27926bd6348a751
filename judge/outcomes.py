"""Outcome evaluation cycles: after an accepted done, a grader checks the deliverables against the outcome's rubric,
between a span.outcome_evaluation_start and a span.outcome_evaluation_end event."""

import json
import logging
from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agent_platform import ids, telemetry
from agent_platform.lib.timestamps import rfc3339
from agent_platform.llm import ModelUnavailable
from runs import spending
from runs.events import emit
from runs.lifecycle import cancel_requested
from runs.models import Run
from runs.usage import read_usage

from . import prompts
from .judging import answer_of, ask_for_answer, final_view_text, latest_verdict, trajectory, verdict_params
from .models import Outcome, OutcomeEvaluation

log = logging.getLogger(__name__)

GRADER_MAX_TOKENS = 4096
GRADER_TRAJECTORY_CHARS = 8000
GRADER_RESULTS = {"satisfied", "needs_revision", "failed"}
Result = OutcomeEvaluation.Result
TOKEN_COUNTS = ("cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens", "output_tokens")


def grader_request(
    run: Run, outcome: Outcome, iteration: int, view: dict[str, Any] | None, done: dict[str, Any] | None
) -> dict[str, Any]:
    verdict = {**latest_verdict(run), **(done or {})}
    data = json.dumps(verdict.get("data"), ensure_ascii=False, indent=1) if verdict.get("data") is not None else "none"
    sections = [
        f"# Outcome\n{outcome.description}",
        f"# Rubric\n{outcome.rubric}",
        f"# Evaluation cycle\nIteration {iteration} of at most {outcome.max_iterations} (0-indexed).",
        f"# The task the agent was given\n{run.task}",
        f"# The agent's latest deliverables\nsuccess: {json.dumps(verdict.get('success'))}\n"
        f"Output:\n{verdict.get('output') or '(empty)'}\nData:\n{data}",
        f"# Steps the run took (short)\n{trajectory(run, max_chars=GRADER_TRAJECTORY_CHARS)}",
        f"# The final page as the agent last saw it\n{final_view_text(view, limit=4000)}",
    ]
    return verdict_params(
        settings.JUDGE_MODEL,
        system=prompts.GRADER_SYSTEM,
        text="\n\n".join(sections),
        extra=[],
        tool=prompts.GRADER_TOOL_DEFINITION,
        max_tokens=GRADER_MAX_TOKENS,
    )


def parse_evaluation(message: Any) -> tuple[dict[str, Any] | None, str]:
    answer, problem = answer_of(message, prompts.GRADER_TOOL)
    if answer is None:
        return None, problem
    if answer.get("result") not in GRADER_RESULTS:
        return None, f"result {answer.get('result')!r} is not satisfied, needs_revision or failed"
    if not isinstance(answer.get("explanation"), str) or not answer["explanation"].strip():
        return None, "explanation is missing or not a string"
    return answer, ""


def usage_of(messages: Iterable[Any]) -> dict[str, Any]:
    """The spec's usage object, summed over the grader's requests of this cycle (one, or two after a retry)."""
    tokens = dict.fromkeys(TOKEN_COUNTS, 0)
    speed: str | None = None
    for message in messages:
        read = read_usage(message.usage)
        for name, count in read.counts().items():
            tokens[name] += count
        speed = read.speed or speed
    return {**tokens, "speed": speed}


def evaluate(
    run: Run, iteration: int, final_view: dict[str, Any] | None, *, done: dict[str, Any] | None = None
) -> OutcomeEvaluation:
    """Run evaluation cycle `iteration` (0-indexed) of the run's outcome and return its stored result.

    `done` may carry the accepted done call's {success, output, data} when the run row does not hold them yet;
    otherwise the latest done call in the run's events is read. A cancel requested before or during the grader's
    request makes the result `interrupted`. The grader's needs_revision on the last allowed iteration becomes
    `max_iterations_reached`. A grader that cannot answer (the model unavailable, or an unusable answer twice)
    ends the cycles as `failed`, with an explanation saying so, rather than leaving the span open.
    """
    outcome = run.outcome
    start_id = ids.event_id()
    started_at = timezone.now()
    with transaction.atomic():
        evaluation, _ = OutcomeEvaluation.objects.update_or_create(
            outcome=outcome,
            iteration=iteration,
            defaults={"start_event_id": start_id, "started_at": started_at, "result": "", "end_event_id": ""},
        )
        emit(
            run,
            "span.outcome_evaluation_start",
            {
                "id": start_id,
                "outcome_id": outcome.public_id,
                "iteration": iteration,
                "processed_at": rfc3339(started_at),
            },
            public_id=start_id,
            processed_at=started_at,
        )

    replies: tuple[Any, ...] = ()
    if cancel_requested(run):
        result, explanation = Result.INTERRUPTED, "The operator interrupted the run before the evaluation ran."
    else:
        try:
            reading = ask_for_answer(
                run,
                grader_request(run, outcome, iteration, final_view, done),
                prompts.GRADER_TOOL,
                parse_evaluation,
                asker="grader",
            )
            answer, problem, replies = reading.answer, reading.problem, reading.replies
        except ModelUnavailable as error:
            answer, problem = None, f"the grader model was unavailable: {error}"
        except spending.CostCapReached as error:
            refusal = str(error).rstrip(".")
            answer, problem = None, refusal[:1].lower() + refusal[1:]
        if cancel_requested(run):
            result, explanation = Result.INTERRUPTED, "The operator interrupted the run while it was being evaluated."
        elif answer is None:
            result, explanation = Result.FAILED, f"The evaluation could not be completed: {problem}."
        else:
            result, explanation = answer["result"], answer["explanation"].strip()
            if result == Result.NEEDS_REVISION and iteration + 1 >= outcome.max_iterations:
                result = Result.MAX_ITERATIONS_REACHED

    usage = usage_of(replies)
    end_id = ids.event_id()
    finished_at = timezone.now()
    with transaction.atomic():
        emit(
            run,
            "span.outcome_evaluation_end",
            {
                "id": end_id,
                "explanation": explanation,
                "iteration": iteration,
                "outcome_evaluation_start_id": start_id,
                "outcome_id": outcome.public_id,
                "processed_at": rfc3339(finished_at),
                "result": str(result),
                "usage": usage,
            },
            public_id=end_id,
            processed_at=finished_at,
        )
        evaluation.result = result
        evaluation.explanation = explanation
        evaluation.end_event_id = end_id
        evaluation.finished_at = finished_at
        evaluation.speed = usage["speed"]
        for name in TOKEN_COUNTS:
            setattr(evaluation, name, usage[name])
        evaluation.save()
    log.info("run %s outcome %s iteration %d: %s", run.public_id, outcome.public_id, iteration, result)
    return evaluation


def revision_message(evaluation: OutcomeEvaluation) -> str:
    """The user message that sends the agent back to work after needs_revision (evaluated next at iteration+1)."""
    return (
        f"Revision requested (iteration {evaluation.iteration + 1}): your deliverables do not meet the outcome's "
        f"rubric yet.\n\n{evaluation.explanation}\n\n"
        "Revise your work in the same browser to meet every criterion, then call done again with the complete, "
        "corrected output (and data)."
    )


def acknowledgment_message(evaluation: OutcomeEvaluation) -> str:
    """The user message of the one final turn after max_iterations_reached: no further evaluation follows."""
    return (
        f"Evaluation budget exhausted (max_iterations_reached after iteration {evaluation.iteration}): the rubric "
        f"is still not met.\n\n{evaluation.explanation}\n\n"
        "No further evaluation will run. Do not take more browser actions: call done once more, with output that "
        "acknowledges what is still missing."
    )


class OutcomeGrader:
    """The loop's outcome evaluator (runs.evaluation.OutcomeEvaluator): the rubric's cycles, graded here."""

    def has_outcome(self, run: Run) -> bool:
        return Outcome.objects.filter(run=run).exists()

    def evaluate(
        self, run: Run, iteration: int, final_view: dict[str, Any] | None, *, done: dict[str, Any] | None
    ) -> OutcomeEvaluation:
        # A span of the run's trace, with the grader's requests as its children.
        with telemetry.span(
            "grade outcome", {"pilothouse.run.id": run.public_id, "pilothouse.outcome.iteration": iteration}
        ) as traced:
            evaluation = evaluate(run, iteration, final_view, done=done)
            traced.set_attribute("pilothouse.outcome.result", str(evaluation.result))
        return evaluation

    def revision_message(self, evaluation: OutcomeEvaluation) -> str:
        return revision_message(evaluation)

    def acknowledgment_message(self, evaluation: OutcomeEvaluation) -> str:
        return acknowledgment_message(evaluation)
