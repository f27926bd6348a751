"""What a webhook says about a run, a judgment or a batch: public fields only (never secrets or judge_context)."""

from typing import Any

from agent_platform.lib.timestamps import rfc3339
from evals.models import Batch
from evals.reports import batch_report
from judge.models import Judgment
from runs.models import Run
from schedules.models import Schedule


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
        "created_at": rfc3339(run.created_at, milliseconds=True),
        "started_at": rfc3339(run.started_at, milliseconds=True),
        "finished_at": rfc3339(run.finished_at, milliseconds=True),
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
        "created_at": rfc3339(batch.created_at, milliseconds=True),
        "finished_at": rfc3339(batch.finished_at, milliseconds=True),
    }


def schedule_data(schedule: Schedule) -> dict[str, Any]:
    return {
        "id": schedule.public_id,
        "name": schedule.name,
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "enabled": schedule.enabled,
        "consecutive_failures": schedule.consecutive_failures,
        "paused_reason": schedule.paused_reason or None,
    }
