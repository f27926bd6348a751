"""Asking for judgments: after a judged run finishes, and again on an operator's request with edited judge_context;
and what a judge_context may be (the launch, a batch and a re-judge check it alike)."""

import logging

from django.contrib.auth.models import User
from django.db import transaction

from agent_platform.errors import Conflict, InvalidRequest
from runs.models import Run

from .tasks import judge_run

log = logging.getLogger(__name__)

JUDGE_CONTEXT_MAX_STATEMENTS = 8
JUDGE_CONTEXT_MAX_CHARS = 500


def clean_judge_context(judge_context: object) -> list[str]:
    def invalid(field: str, message: str) -> InvalidRequest:
        return InvalidRequest.of_field(field, message)

    if judge_context is None:
        return []
    if not isinstance(judge_context, list):
        raise invalid("judge_context", "must be a list of statements")
    if len(judge_context) > JUDGE_CONTEXT_MAX_STATEMENTS:
        raise invalid(
            "judge_context", f"has {len(judge_context)} statements; at most {JUDGE_CONTEXT_MAX_STATEMENTS} are allowed"
        )
    cleaned = []
    for index, statement in enumerate(judge_context):
        field = f"judge_context[{index}]"
        if not isinstance(statement, str):
            raise invalid(field, "must be a string")
        statement = statement.strip()
        if not statement:
            raise invalid(field, "must not be empty")
        if len(statement) > JUDGE_CONTEXT_MAX_CHARS:
            raise invalid(field, f"is {len(statement)} characters; the limit is {JUDGE_CONTEXT_MAX_CHARS}")
        cleaned.append(statement)
    return cleaned


def enqueue_judgment(
    run: Run,
    *,
    judge_context: list[str] | None = None,
    requested_by: User | None = None,
    model: str | None = None,
    mode: str | None = None,
) -> None:
    """Queue a judge task once the current transaction commits, so the worker reads the committed run; `model`
    overrides JUDGE_MODEL for this judgment (re-judging with another judge)."""
    requested_by_id = requested_by.pk if requested_by is not None else None

    def send() -> None:
        try:
            judge_run.delay(
                run.pk, judge_context=judge_context, requested_by_id=requested_by_id, model=model, mode=mode
            )
        except Exception:
            # The run's own result is unaffected; an operator can re-judge once the broker is back.
            log.exception("could not enqueue the judgment of %s", run.public_id)

    transaction.on_commit(send)


def judge_on_finish(run: Run) -> None:
    """A run created with judge: true gets a judgment after any ending but cancelled."""
    if run.judge and run.status in Run.TERMINAL and run.status != Run.Status.CANCELLED:
        enqueue_judgment(run)


def request_rejudge(
    run: Run, *, judge_context: object, requested_by: User | None, model: str | None = None, mode: str | None = None
) -> None:
    """Judge a finished run again with this judge_context (None: the run's own); every judgment is kept and billed
    as judge usage.

    Raises InvalidRequest for a bad judge_context (the launch rules: at most 8 statements of at most 500
    characters), Conflict for a run that has not finished.
    """
    cleaned = None if judge_context is None else clean_judge_context(judge_context)
    run.refresh_from_db(fields=["status"])
    if not run.is_finished:
        raise Conflict(f"The run is {run.status}; only a finished run can be judged again.", field="status")
    if mode is not None and mode not in ("standard", "key_points"):
        raise InvalidRequest.of_field("judge_mode", "must be standard or key_points")
    enqueue_judgment(run, judge_context=cleaned, requested_by=requested_by, model=model, mode=mode)
