"""Listeners: a batch run that finished or was judged moves its batch on (next runs, or finished); a suite run that
finished is scored by its reference's rules."""

import logging
from typing import Any

from django.dispatch import receiver

from runs.models import Event, Run
from runs.signals import run_lifecycle_event

from .models import BatchRun
from .tasks import advance_batch, score_rules

log = logging.getLogger(__name__)


@receiver(run_lifecycle_event, dispatch_uid="evals.advance_batch_on_run_event")
def advance_batch_on_run_event(sender: type[Run], run: Run, event: Event, **kwargs: Any) -> None:
    if event.type not in ("run.finished", "run.judged"):
        return  # a file downloaded mid-run does not move a batch
    found = BatchRun.objects.filter(run_id=run.pk).values_list("batch_id", "task__suite_task_id").first()
    if found is None:
        return
    batch_id, suite_task_id = found
    if event.type == "run.finished" and suite_task_id is not None and run.status != Run.Status.CANCELLED:
        try:
            score_rules.delay(run.pk)
        except Exception:
            log.exception("could not enqueue the rule score of %s", run.public_id)
    try:
        advance_batch.delay(batch_id)
    except Exception:
        # The next run.finished or run.judged of the batch moves it on; nothing is lost but time.
        log.exception("could not enqueue advance_batch for batch %s", batch_id)
