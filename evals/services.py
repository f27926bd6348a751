"""State changes of evaluations: planning a batch, launching its runs as slots free, finishing, re-judging, truths."""

import csv
import io
import json
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import Conflict, InvalidRequest, ServiceError
from agent_platform.models import Workspace
from runs.events import pusher, workspace_group
from runs.judging.models import Judgment
from runs.judging.services import clean_judge_context, request_rejudge
from runs.launch import (
    clean_max_turns,
    clean_model,
    clean_output_schema,
    clean_start_url,
    clean_task,
    launch_run,
)
from runs.lifecycle import request_cancel
from runs.models import Run

from .models import Batch, BatchConfig, BatchRun, BatchTask, JudgeRound, Truth
from .signals import batch_finished

log = logging.getLogger(__name__)

REPEATS_LIMIT = 100
CONCURRENCY_DEFAULT = 4
CONCURRENCY_LIMIT = 50
TASKS_LIMIT = 200
CONFIGS_LIMIT = 10
RUNS_LIMIT = 2000
NAME_MAX_CHARS = 200
NOTE_MAX_CHARS = 5000
SUITE_MAX_BYTES = 1024 * 1024
TASK_FIELDS = {"task", "start_url", "output_schema", "judge_context", "expected"}
CONFIG_FIELDS = {"model", "effort", "max_turns"}
EFFORTS = {choice.value for choice in BatchConfig.Effort}


# --- planning ------------------------------------------------------------------------------------------------------


def clean_int(value: object, field: str, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest.of_field(field, "must be an integer")
    if not low <= value <= high:
        raise InvalidRequest.of_field(field, f"must be between {low} and {high}")
    return value


def nested_in(field: str, error: ServiceError) -> ServiceError:
    """The same refusal (its class, detail and headers kept) named from the batch: `tasks[2].` before its message
    and field."""
    return type(error)(
        f"{field}.{error.message}", field=f"{field}.{error.field}", detail=error.detail, headers=error.headers
    )


def clean_batch_task(item: object, index: int) -> dict[str, Any]:
    field = f"tasks[{index}]"
    if not isinstance(item, dict):
        raise InvalidRequest.of_field(
            field, "must be an object {task, start_url, output_schema, judge_context, expected}"
        )
    unknown = sorted(set(item) - TASK_FIELDS)
    if unknown:
        raise InvalidRequest.of_field(
            f"{field}.{unknown[0]}", "is not a field of a task (" + ", ".join(sorted(TASK_FIELDS)) + ")"
        )
    try:
        return {
            "task": clean_task(item.get("task")),
            "start_url": clean_start_url(item.get("start_url")),
            "output_schema": clean_output_schema(item.get("output_schema")),
            "judge_context": clean_judge_context(item.get("judge_context")),
            "expected": item.get("expected"),
        }
    except ServiceError as error:
        raise nested_in(field, error) from None


def clean_batch_config(item: object, index: int) -> dict[str, Any]:
    field = f"configs[{index}]"
    if not isinstance(item, dict):
        raise InvalidRequest.of_field(field, "must be an object {model, effort, max_turns}")
    unknown = sorted(set(item) - CONFIG_FIELDS)
    if unknown:
        raise InvalidRequest.of_field(
            f"{field}.{unknown[0]}", "is not a field of a configuration (model, effort, max_turns)"
        )
    effort = item.get("effort") or ""
    if effort not in EFFORTS:
        raise InvalidRequest.of_field(f"{field}.effort", "must be one of low, medium, high, max (or omitted)")
    try:
        return {
            "model": clean_model(item.get("model")),
            "effort": effort,
            "max_turns": clean_max_turns(item.get("max_turns")),
        }
    except ServiceError as error:
        raise nested_in(field, error) from None


@transaction.atomic
def create_batch(
    workspace: Workspace,
    *,
    tasks: list[Any],
    configs: list[Any] | None = None,
    repeats: object = None,
    concurrency: object = None,
    judge: object = True,
    pass_k: object = None,
    name: str = "",
    created_by: User | None = None,
) -> Batch:
    """Validate a suite and its configurations, plan every run, and launch as many as the concurrency allows.

    Raises InvalidRequest naming the field, before anything is created. The numbers and `judge` are checked here
    whatever a caller sends (the form sends text), hence typed `object`.
    """
    if not isinstance(tasks, list) or not tasks:
        raise InvalidRequest.of_field("tasks", "must be a non-empty list of tasks")
    if len(tasks) > TASKS_LIMIT:
        raise InvalidRequest.of_field("tasks", f"has {len(tasks)} tasks; at most {TASKS_LIMIT} are allowed")
    configs = configs or [{}]
    if not isinstance(configs, list):
        raise InvalidRequest.of_field("configs", "must be a list of configurations")
    if len(configs) > CONFIGS_LIMIT:
        raise InvalidRequest.of_field(
            "configs", f"has {len(configs)} configurations; at most {CONFIGS_LIMIT} are allowed"
        )
    repeats = clean_int(repeats, "repeats", 1, REPEATS_LIMIT, 1)
    concurrency = clean_int(concurrency, "concurrency", 1, CONCURRENCY_LIMIT, CONCURRENCY_DEFAULT)
    pass_k = clean_int(pass_k, "pass_k", 1, repeats, repeats)
    if not isinstance(judge, bool):
        raise InvalidRequest.of_field("judge", "must be true or false")
    if not isinstance(name, str) or len(name) > NAME_MAX_CHARS:
        raise InvalidRequest.of_field("name", f"must be a string of at most {NAME_MAX_CHARS} characters")
    cleaned_tasks = [clean_batch_task(item, index) for index, item in enumerate(tasks)]
    cleaned_configs = [clean_batch_config(item, index) for index, item in enumerate(configs)]
    total = len(cleaned_tasks) * len(cleaned_configs) * repeats
    if total > RUNS_LIMIT:
        raise InvalidRequest.of_field("repeats", f"the batch would make {total} runs; at most {RUNS_LIMIT} are allowed")

    batch = Batch.objects.create(
        workspace=workspace,
        name=name.strip(),
        repeats=repeats,
        concurrency=concurrency,
        judge=judge,
        pass_k=pass_k,
        created_by=created_by,
    )
    task_rows = BatchTask.objects.bulk_create(
        BatchTask(batch=batch, position=index, **item) for index, item in enumerate(cleaned_tasks)
    )
    config_rows = BatchConfig.objects.bulk_create(
        BatchConfig(batch=batch, position=index, **item) for index, item in enumerate(cleaned_configs)
    )
    # Repeat-major order, so the first results already cover every task and configuration.
    BatchRun.objects.bulk_create(
        BatchRun(batch=batch, task=task, config=config, repeat=repeat)
        for repeat in range(repeats)
        for task in task_rows
        for config in config_rows
    )
    fill_slots(batch.pk)
    return batch


def launch_item(item: BatchRun, batch: Batch) -> Run:
    task, config = item.task, item.config
    fields = {
        "task": task.task,
        "start_url": task.start_url,
        "model": config.model,
        "max_turns": config.max_turns,
        "output_schema": task.output_schema,
        "judge": batch.judge,
        "judge_context": task.judge_context,
        "metadata": {"batch_id": batch.public_id},
        "created_by": batch.created_by,
    }
    return launch_run(batch.workspace, effort=config.effort, **fields).run


def fill_slots(batch_pk: int) -> int:
    """Launch planned runs while the batch has fewer active runs than its concurrency; then see if it finished.

    The batch row is locked, so concurrent callers (every run.finished of the batch) never overfill the slots.
    Returns how many runs were launched.
    """
    launched = 0
    with transaction.atomic():
        batch = (
            Batch.objects.select_for_update(of=("self",))
            .select_related("workspace", "created_by")
            .filter(pk=batch_pk)
            .first()
        )
        if batch is None or batch.status != Batch.Status.RUNNING:
            return 0
        active = batch.items.filter(run__status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).count()
        free = batch.concurrency - active
        if free > 0:
            pending = batch.items.filter(run__isnull=True, launch_error="").select_related("task", "config")
            for item in pending.order_by("id")[:free]:
                try:
                    item.run = launch_item(item, batch)
                    item.launched_at = timezone.now()
                except ServiceError as error:  # validated at planning; a model or schema rule may change since
                    item.launch_error = error.message
                item.save(update_fields=["run", "launched_at", "launch_error"])
                launched += item.run_id is not None
        if not finish_if_done(batch) and launched:
            transaction.on_commit(lambda: push_batch_changed(batch))
    return launched


def finish_if_done(batch: Batch) -> bool:
    """Mark a running batch finished once every run ended and every judged run has its judgment (caller locks)."""
    if batch.status != Batch.Status.RUNNING:
        return False
    items = batch.items
    if items.filter(run__isnull=True, launch_error="").exists():
        return False
    if items.filter(run__isnull=False).exclude(run__status__in=Run.TERMINAL).exists():
        return False
    unjudged = items.filter(run__judge=True, run__judgments__isnull=True).exclude(run__status=Run.Status.CANCELLED)
    if unjudged.exists():
        return False
    batch.status = Batch.Status.FINISHED
    batch.finished_at = timezone.now()
    batch.save(update_fields=["status", "finished_at"])
    transaction.on_commit(lambda: announce_finished(batch))
    transaction.on_commit(lambda: push_batch_changed(batch))
    return True


def push_batch_changed(batch: Batch) -> None:
    """Tell the workspace's live pages (the batch page listens) that the batch launched runs, finished or stopped.

    Its runs' own changes already reach that socket as run.changed; this covers what happens to the batch itself,
    which its last run's run.finished precedes. Best effort, like every push: a reload reads the database."""
    pusher.send([(workspace_group(batch.workspace_id), {"type": "batch.changed", "batch_id": batch.public_id})])


def announce_finished(batch: Batch) -> None:
    for receiver, result in batch_finished.send_robust(sender=Batch, batch=batch):
        if isinstance(result, Exception):
            log.error("listener %r of batch.finished failed", receiver, exc_info=result)


def cancel_batch(batch: Batch) -> Batch:
    """Idempotent: no planned run launches any more, and the batch's active runs are cancelled."""
    with transaction.atomic():
        updated = Batch.objects.filter(pk=batch.pk, status=Batch.Status.RUNNING).update(
            status=Batch.Status.CANCELLED, finished_at=timezone.now()
        )
    if updated:
        for run in Run.objects.filter(batch_item__batch=batch).active():
            request_cancel(run)
        push_batch_changed(batch)
    batch.refresh_from_db()
    return batch


# --- re-judging and truths -----------------------------------------------------------------------------------------


def rejudge_batch(
    batch: Batch, *, judge_context: object = None, judge_model: str | None = None, requested_by: User | None = None
) -> JudgeRound:
    """Judge every finished run of the batch again (with this judge_context, None: each run's own) as a new round.

    The round records the judge model it asked for.
    Raises InvalidRequest for a bad judge_context or model, Conflict while runs are still going.
    """
    cleaned = None if judge_context is None else clean_judge_context(judge_context)
    extra: dict[str, str] = {}
    if judge_model:
        extra["model"] = clean_model(judge_model)
    runs = list(Run.objects.filter(batch_item__batch=batch).finished())
    if batch.items.filter(run__isnull=False).exclude(run__status__in=Run.TERMINAL).exists():
        raise Conflict("The batch still has runs going; re-judge it once they have finished.")
    with transaction.atomic():
        last = batch.rounds.order_by("-number").values_list("number", flat=True).first() or 0
        round_ = JudgeRound.objects.create(
            batch=batch,
            number=last + 1,
            judge_context=cleaned,
            judge_model=extra.get("model") or settings.JUDGE_MODEL,
            requested_by=requested_by,
        )
        for run in runs:
            request_rejudge(run, judge_context=cleaned, requested_by=requested_by, **extra)
    return round_


def record_truth(
    workspace: Workspace, judgment: Judgment, *, value: str, note: str = "", recorded_by: User | None = None
) -> Truth:
    """Record (or replace) what really happened in the judged run: agent_right, judge_right or both_wrong."""
    if value not in Truth.Value.values:
        raise InvalidRequest.of_field("truth", "must be agent_right, judge_right or both_wrong")
    if not isinstance(note, str) or len(note) > NOTE_MAX_CHARS:
        raise InvalidRequest.of_field("note", f"must be a string of at most {NOTE_MAX_CHARS} characters")
    truth, _ = Truth.objects.update_or_create(
        judgment=judgment,
        defaults={
            "workspace": workspace,
            "value": value,
            "note": note.strip(),
            "recorded_by": recorded_by,
            "recorded_at": timezone.now(),
        },
    )
    return truth


# --- suites from files ---------------------------------------------------------------------------------------------


def parse_suite(content: bytes, filename: str) -> list[Any]:
    """Tasks from a JSONL file (one object a line) or a CSV file (a header row; JSON in the object columns).

    Raises InvalidRequest naming the line.
    """
    if len(content) > SUITE_MAX_BYTES:
        raise InvalidRequest.of_field("suite", f"is larger than {SUITE_MAX_BYTES} bytes")
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidRequest.of_field("suite", "is not UTF-8 text") from None
    if filename.lower().endswith(".csv"):
        return parse_csv_suite(text)
    tasks = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            tasks.append(json.loads(line))
        except ValueError as error:
            raise InvalidRequest.of_field(f"suite line {number}", f"is not JSON: {error}") from None
    if not tasks:
        raise InvalidRequest.of_field("suite", "has no tasks")
    return tasks


def parse_csv_suite(text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None or "task" not in reader.fieldnames:
        raise InvalidRequest.of_field("suite", "a CSV suite needs a header row with a 'task' column")
    tasks = []
    for number, row in enumerate(reader, start=2):
        item: dict[str, Any] = {}
        for column, value in row.items():
            if column is None or value is None or value == "":
                continue
            column = column.strip()
            if column in ("output_schema", "judge_context", "expected"):
                try:
                    item[column] = json.loads(value)
                except ValueError as error:
                    raise InvalidRequest.of_field(f"suite line {number}", f"{column} is not JSON: {error}") from None
            else:
                item[column] = value
        tasks.append(item)
    if not tasks:
        raise InvalidRequest.of_field("suite", "has no tasks")
    return tasks
