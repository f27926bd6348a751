"""What a webhook says about a run, a judgment or a batch: public fields only (never secrets or judge_context)."""

from datetime import datetime
from typing import Any

from evals.models import Batch
from evals.reports import batch_report
from judge.models import Judgment
from runs.models import Run


def instant(value: datetime | None) -> str | None:
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z") if value else None


def run_data(run: Run) -> dict[str, Any]:
    return {
        "id": run.public_id,
        "session_id": run.session.public_id,
        "status": run.status,
        "success": run.success,
        "error_code": run.error_code or None,
        "error_message": run.error_message or None,
        "task": run.task,
        "model": run.model,
        "output": run.output,
        "data": run.data,
        "metadata": run.metadata,
        "usage": run.usage,
        "created_at": instant(run.created_at),
        "started_at": instant(run.started_at),
        "finished_at": instant(run.finished_at),
    }


def judgment_data(judgment: Judgment) -> dict[str, Any]:
    return {**judgment.as_dict(), "id": judgment.pk, "judge_model": judgment.model}


def batch_data(batch: Batch) -> dict[str, Any]:
    report = batch_report(batch)
    return {
        "id": batch.public_id,
        "name": batch.name,
        "status": batch.status,
        "repeats": batch.repeats,
        "counts": report.counts,
        "matrix": report.matrix,
        "groups": [
            {
                "task_index": group.task.position,
                "config_index": group.config.position,
                "runs": group.stats.runs,
                "success_rate": group.stats.success_rate,
                "pass_at_1": group.stats.pass_at_1,
                "flaky": group.stats.flaky,
            }
            for group in report.groups
        ],
        "created_at": instant(batch.created_at),
        "finished_at": instant(batch.finished_at),
    }
