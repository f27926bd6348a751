"""Suite runs without a worker: a finished run placed in a batch over a suite task with a given reference, and a run
that claims something distinctive, so a test can look for the claim in what the judge was sent."""

from evals.models import Batch, BatchConfig, BatchRun, BatchTask, Suite, SuiteTask
from runs.events import emit
from runs.lifecycle import finish, mark_started
from runs.models import Run
from tests.support.factories import make_run

CLAIM = "CLAIM-7731: all three products are listed"


def suite_task(workspace, *, reference: dict | None = None, level: str = "", external_id: str = "t1", suite=None):
    suite = suite or Suite.objects.create(workspace=workspace, name="rules", format=Suite.Format.WEBARENA)
    position = suite.tasks.count()
    return SuiteTask.objects.create(
        suite=suite,
        position=position,
        external_id=external_id,
        intent="Open the second page and say its heading.",
        level=level,
        reference=reference or {},
    )


def place_in_batch(run: Run, task: SuiteTask, *, model: str = "claude-sonnet-5-5", batch=None, repeat: int = 0):
    """The run as one planned run of a batch over the suite (one configuration per model)."""
    batch = batch or Batch.objects.create(workspace=run.workspace, suite=task.suite, name="b", repeats=4, pass_k=2)
    batch_task, _ = BatchTask.objects.get_or_create(
        batch=batch, suite_task=task, defaults={"position": batch.tasks.count(), "task": task.intent}
    )
    config, _ = BatchConfig.objects.get_or_create(
        batch=batch, model=model, defaults={"position": batch.configs.count(), "max_turns": 10}
    )
    return BatchRun.objects.create(batch=batch, task=batch_task, config=config, repeat=repeat, run=run)


def claiming_run(workspace, *, success: bool = True, output: str = CLAIM, data=None, final_view: dict | None = None,
                 status: str = Run.Status.SUCCEEDED, error_code: str = "", **fields) -> Run:  # fmt: skip
    """A finished run that navigated, read a page and called done with `output` (and `data`)."""
    run = make_run(workspace, judge=False, **fields)
    mark_started(run, "tests")
    emit(run, "agent.message", {"text": f"I believe that {output}"})
    emit(run, "agent.tool_use", {"id": "toolu_1", "name": "navigate", "input": {"url": "http://shop.test/second"}})
    emit(run, "agent.tool_result", {"tool_use_id": "toolu_1", "name": "navigate", "content": "Second page opened."})
    done_input = {"success": success, "output": output, "data": data}
    emit(run, "agent.tool_use", {"id": "toolu_2", "name": "done", "input": done_input})
    emit(run, "agent.tool_result", {"tool_use_id": "toolu_2", "content": f"Recorded: {output}", "is_error": False})
    view = {"url": "http://shop.test/second", "title": "Second page", "text": "Second page. Heading."}
    emit(run, "agent.final_view", {**view, **(final_view or {})})
    if status == Run.Status.SUCCEEDED:
        finish(run, status, success=success, output=output, data=data)
    else:
        finish(run, status, success=False, output=output, error_code=error_code or Run.ErrorCode.TASK_FAILED)
    run.refresh_from_db()
    return run
