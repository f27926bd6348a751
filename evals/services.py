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

from agent_platform.errors import Conflict, InvalidRequest, NotFound, ServiceError
from agent_platform.models import Workspace
from browsers import services as browser_sessions
from browsers.external import EXTERNAL_MODEL
from judge.models import Judgment
from judge.services import clean_judge_context, request_rejudge
from runs.events import pusher, workspace_group
from runs.launch import launch
from runs.launch_rules import (
    LaunchRequest,
    clean_effort,
    clean_max_turns,
    clean_model,
    clean_output_schema,
    clean_start_url,
    clean_task,
    model_profile,
)
from runs.lifecycle import request_cancel
from runs.models import Run

from .models import (
    Batch,
    BatchConfig,
    BatchRun,
    BatchTask,
    HumanLabel,
    JudgeMode,
    JudgeRound,
    Suite,
    SuiteTask,
    Truth,
)
from .scoring import reference_metadata
from .signals import batch_finished
from .suites import SUITE_TASKS_LIMIT, clean_judge_mode

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
CONFIG_FIELDS = {"model", "effort", "thinking", "max_turns"}


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
        raise InvalidRequest.of_field(field, "must be an object {model, effort, thinking, max_turns}")
    unknown = sorted(set(item) - CONFIG_FIELDS)
    if unknown:
        raise InvalidRequest.of_field(
            f"{field}.{unknown[0]}", "is not a field of a configuration (model, effort, thinking, max_turns)"
        )
    thinking = item.get("thinking") or ""
    if not isinstance(thinking, str) or len(thinking) > 20:
        # which modes a model takes is the launch's to say (its profile), when the run launches
        raise InvalidRequest.of_field(f"{field}.thinking", "must be a thinking mode's name (or omitted)")
    try:
        model = clean_model(item.get("model"))
        max_turns = clean_max_turns(item.get("max_turns"))
        # The launch's own rules, Models API last: a model it knows, an effort level that model offers.
        effort = clean_effort(item.get("effort"), model_profile(model))
        return {"model": model, "effort": effort, "thinking": thinking, "max_turns": max_turns}
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
    judge_mode: object = None,
    suite_tasks: list[SuiteTask] | None = None,
) -> Batch:
    """Validate a suite and its configurations, plan every run, and launch as many as the concurrency allows.

    Raises InvalidRequest naming the field, before anything is created. The numbers and `judge` are checked here
    whatever a caller sends (the form sends text), hence typed `object`. A suite's launch gives `suite_tasks`, one
    per task, so each run can be scored against its reference (evals.suites.launch_suite).
    """
    if not isinstance(tasks, list) or not tasks:
        raise InvalidRequest.of_field("tasks", "must be a non-empty list of tasks")
    if len(tasks) > (SUITE_TASKS_LIMIT if suite_tasks else TASKS_LIMIT):
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
    mode = clean_judge_mode(judge_mode)
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
        judge_mode=mode,
        suite=suite_tasks[0].suite if suite_tasks else None,
        created_by=created_by,
    )
    task_rows = BatchTask.objects.bulk_create(
        BatchTask(batch=batch, position=index, suite_task=suite_tasks[index] if suite_tasks else None, **item)
        for index, item in enumerate(cleaned_tasks)
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


def batch_of_sessions(
    workspace: Workspace,
    *,
    browser_session_ids: list[Any],
    name: str = "",
    created_by: User | None = None,
) -> Batch:
    """A batch of browser sessions already finished with their client's claim (POST /browsers/{id}/finish): each
    session's run is one of its runs, a task per distinct task text, one configuration (the client's own agent,
    model "external"); nothing is launched. Judged as the claims asked; POST /batches/{id}/rejudge judges them all.

    Raises NotFound naming a session not of this workspace, Conflict one not finished with a claim."""
    if not isinstance(browser_session_ids, list) or not browser_session_ids:
        raise InvalidRequest.of_field("browser_session_ids", "must be a non-empty list of browser session ids")
    if len(browser_session_ids) > RUNS_LIMIT:
        raise InvalidRequest.of_field("browser_session_ids", f"at most {RUNS_LIMIT} sessions are allowed")
    if not isinstance(name, str) or len(name) > NAME_MAX_CHARS:
        raise InvalidRequest.of_field("name", f"must be a string of at most {NAME_MAX_CHARS} characters")
    runs: list[Run] = []
    for index, session_id in enumerate(browser_session_ids):
        field = f"browser_session_ids[{index}]"
        try:
            session = browser_sessions.get_session(workspace, str(session_id))
        except NotFound as error:
            raise NotFound(f"{field}: {error.message}") from None
        run = session.run
        if run is None or run.status not in Run.TERMINAL:
            raise Conflict(
                f"{field}: {session.public_id} has not finished with a claim (POST /api/v1/browsers/{{id}}/finish)"
            )
        if any(run.pk == other.pk for other in runs):
            raise InvalidRequest.of_field(field, f"{session.public_id} is named twice")
        runs.append(run)
    tasks = list(dict.fromkeys(run.task for run in runs))
    occurrences = dict.fromkeys(tasks, 0)
    with transaction.atomic():
        batch = Batch.objects.create(
            workspace=workspace,
            name=name.strip(),
            repeats=1,
            concurrency=1,
            judge=any(run.judge for run in runs),
            pass_k=1,
            created_by=created_by,
        )
        task_rows = {
            row.task: row
            for row in BatchTask.objects.bulk_create(
                BatchTask(batch=batch, position=index, task=task) for index, task in enumerate(tasks)
            )
        }
        config = BatchConfig.objects.create(
            batch=batch, position=0, model=EXTERNAL_MODEL, max_turns=max(run.max_turns for run in runs)
        )
        items = []
        for run in runs:
            repeat, occurrences[run.task] = occurrences[run.task], occurrences[run.task] + 1
            items.append(
                BatchRun(
                    batch=batch,
                    task=task_rows[run.task],
                    config=config,
                    repeat=repeat,
                    run=run,
                    launched_at=run.created_at,
                )
            )
        BatchRun.objects.bulk_create(items)
        batch.repeats = max(occurrences.values())
        batch.save(update_fields=["repeats"])
    fill_slots(batch.pk)  # nothing to launch: finished at once unless a judgment is still coming
    batch.refresh_from_db()
    return batch


def launch_item(item: BatchRun, batch: Batch) -> Run:
    task, config = item.task, item.config
    metadata: dict[str, Any] = {"batch_id": batch.public_id}
    if batch.judge_mode != JudgeMode.STANDARD:
        metadata["judge_mode"] = batch.judge_mode  # the judge reads the run's mode there (judge.judging)
    if task.suite_task is not None:
        metadata.update(reference_metadata(task.suite_task))
    request = LaunchRequest(
        task=task.task,
        start_url=task.start_url,
        model=config.model,
        effort=config.effort,
        thinking=config.thinking or None,
        max_turns=config.max_turns,
        output_schema=task.output_schema,
        judge=batch.judge,
        judge_context=task.judge_context,
        metadata=metadata,
        created_by=batch.created_by,
    )
    return launch(batch.workspace, request).run


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
            pending = batch.items.filter(run__isnull=True, launch_error="").select_related(
                "task", "config", "task__suite_task"
            )
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
    batch: Batch,
    *,
    judge_context: object = None,
    judge_model: str | None = None,
    judge_mode: object = None,
    requested_by: User | None = None,
) -> JudgeRound:
    """Judge every finished run of the batch again (with this judge_context, None: each run's own) as a new round.

    The round records the judge model and mode it asked for (the mode: the batch's unless one is given).
    Raises InvalidRequest for a bad judge_context or model, Conflict while runs are still going.
    """
    cleaned = None if judge_context is None else clean_judge_context(judge_context)
    mode = clean_judge_mode(judge_mode or batch.judge_mode)
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
            judge_mode=mode,
            requested_by=requested_by,
        )
        for run in runs:
            request_rejudge(run, judge_context=cleaned, requested_by=requested_by, mode=mode, **extra)
    return round_


def launch_suite(
    suite: Suite,
    *,
    configs: list[Any] | None = None,
    repeats: object = None,
    concurrency: object = None,
    judge: object = True,
    judge_mode: object = None,
    pass_k: object = None,
    name: str = "",
    task_ids: list[str] | None = None,
    created_by: User | None = None,
) -> Batch:
    """A batch over the suite's tasks that are not stale (or the ones `task_ids` names), through the one function
    every batch is launched by, in the suite's judge mode unless another is given."""
    tasks = suite.tasks.filter(stale=False)
    if task_ids:
        tasks = tasks.filter(external_id__in=task_ids)
    chosen = list(tasks)
    if not chosen:
        raise InvalidRequest.of_field("task_ids", "no task of the suite that is not stale was chosen")
    return create_batch(
        suite.workspace,
        tasks=[
            {
                key: value
                for key, value in {
                    "task": task.intent,
                    "start_url": task.start_url or None,
                    "output_schema": task.output_schema,
                    "judge_context": task.judge_context or None,
                    "expected": task.expected,
                }.items()
                if value is not None
            }
            for task in chosen
        ],
        configs=configs,
        repeats=repeats,
        concurrency=concurrency,
        judge=judge,
        judge_mode=judge_mode or suite.judge_mode,
        pass_k=pass_k,
        name=name or suite.name,
        created_by=created_by,
        suite_tasks=chosen,
    )


def record_label(
    workspace: Workspace,
    run: Run,
    *,
    success: object,
    source: str = HumanLabel.Source.TRIAGE,
    note: str = "",
    recorded_by: User | None = None,
) -> HumanLabel:
    """Record (or replace) a person's reading of whether the run really succeeded."""
    if not isinstance(success, bool):
        raise InvalidRequest.of_field("success", "must be true or false")
    if not isinstance(note, str) or len(note) > NOTE_MAX_CHARS:
        raise InvalidRequest.of_field("note", f"must be a string of at most {NOTE_MAX_CHARS} characters")
    label, _ = HumanLabel.objects.update_or_create(
        run=run,
        defaults={
            "workspace": workspace,
            "success": success,
            "source": source,
            "note": note.strip(),
            "recorded_by": recorded_by,
            "recorded_at": timezone.now(),
        },
    )
    return label


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
