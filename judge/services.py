"""Asking for judgments: after a judged run finishes, and again on an operator's request with edited judge_context."""

import logging

from django.contrib.auth.models import User
from django.db import transaction

from agent_platform.errors import Conflict
from runs.launch import clean_judge_context
from runs.models import Run

from .tasks import judge_run

log = logging.getLogger(__name__)


def enqueue_judgment(
    run: Run, *, judge_context: list[str] | None = None, requested_by: User | None = None, model: str | None = None
) -> None:
    """Queue a judge task once the current transaction commits, so the worker reads the committed run; `model`
    overrides JUDGE_MODEL for this judgment (re-judging with another judge)."""
    requested_by_id = requested_by.pk if requested_by is not None else None

    def send() -> None:
        try:
            judge_run.delay(run.pk, judge_context=judge_context, requested_by_id=requested_by_id, model=model)
        except Exception:
            # The run's own result is unaffected; an operator can re-judge once the broker is back.
            log.exception("could not enqueue the judgment of %s", run.public_id)

    transaction.on_commit(send)


def judge_on_finish(run: Run) -> None:
    """A run created with judge: true gets a judgment after any ending but cancelled."""
    if run.judge and run.status in Run.TERMINAL and run.status != Run.Status.CANCELLED:
        enqueue_judgment(run)


def request_rejudge(run: Run, *, judge_context: object, requested_by: User | None, model: str | None = None) -> None:
    """Judge a finished run again with this judge_context (None: the run's own); every judgment is kept and billed
    as judge usage.

    Raises InvalidRequest for a bad judge_context (the launch rules: at most 8 statements of at most 500
    characters), Conflict for a run that has not finished.
    """
    cleaned = None if judge_context is None else clean_judge_context(judge_context)
    run.refresh_from_db(fields=["status"])
    if not run.is_finished:
        raise Conflict(f"The run is {run.status}; only a finished run can be judged again.", field="status")
    enqueue_judgment(run, judge_context=cleaned, requested_by=requested_by, model=model)
