"""People's labels of runs: imported from a file (by run id, or by a suite task's id within a batch; Online-Mind2Web's
released human_label shape among them), and a random sample of runs for triage, so labels are not only
disagreements."""

import csv
import io
import json
import random
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from agent_platform.errors import InvalidRequest
from agent_platform.models import Workspace
from runs.models import Run

from .models import Batch, HumanLabel
from .services import record_label
from .suites import objects_of

LABELS_MAX_BYTES = 4 * 1024 * 1024
SAMPLE_MAX = 100
ID_KEYS = ("run_id", "external_id", "task_id")
VALUE_KEYS = ("success", "human_label", "label")
# Online-Mind2Web: 0 failure, 1 success, 2 not executable (the site or the agent's harness stood in the way).
NOT_EXECUTABLE = 2


@dataclass(frozen=True)
class LabelImport:
    imported: int
    skipped: list[dict[str, Any]]


def label_value(value: object) -> bool | None:
    """True or False from a label's value; None for "not executable" (Online-Mind2Web's 2); ValueError otherwise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1, NOT_EXECUTABLE):
        return None if value == NOT_EXECUTABLE else bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true", "success", "succeeded", "pass", "yes"):
            return True
        if text in ("0", "false", "failure", "failed", "fail", "no"):
            return False
        if text == "2":
            return None
    raise ValueError(value)


def records_of(content: str, agent: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, {id key: ..., "success": ...}) from JSON Lines, a JSON array, a JSON object {task_id: label or
    {agent: label}}, or CSV with a header row."""
    stripped = content.lstrip()
    if stripped and stripped[0] not in "[{":
        reader = csv.DictReader(io.StringIO(content))
        return [(number, dict(row)) for number, row in enumerate(reader, start=2)]
    if stripped.startswith("{"):
        try:
            whole = json.loads(content)
        except ValueError:
            whole = None
        if isinstance(whole, dict) and not (set(whole) & set(ID_KEYS)):
            return [(1, {"task_id": key, agent or "label": value}) for key, value in whole.items()]
    return list(objects_of(content))


def import_labels(
    workspace: Workspace,
    *,
    content: object,
    batch_id: object = None,
    agent: object = None,
    recorded_by: User | None = None,
) -> LabelImport:
    """Record every label of the file, all or nothing.

    A record names a run (`run_id`) or a suite task (`external_id` or Online-Mind2Web's `task_id`, within the batch
    `batch_id` names: every finished run of that task there gets the label). Its value is `success` (true/false,
    1/0), or `human_label`/`label`, or the column named by `agent` in Online-Mind2Web's file, where 2 (not
    executable) is skipped. Raises InvalidRequest naming the line and field of the first wrong record."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InvalidRequest.of_field("content", "is not UTF-8 text") from None
    if not isinstance(content, str) or not content.strip():
        raise InvalidRequest.of_field("content", "must be the labels file's text")
    if len(content) > LABELS_MAX_BYTES:
        raise InvalidRequest.of_field("content", f"is larger than {LABELS_MAX_BYTES} bytes")
    if agent is not None and not isinstance(agent, str):
        raise InvalidRequest.of_field("agent", "must be the name of the agent's column")
    batch = None
    if batch_id:
        batch = Batch.objects.for_workspace(workspace).filter(public_id=batch_id).first()
        if batch is None:
            raise InvalidRequest.of_field("batch_id", f"no batch {batch_id!r} in this workspace")

    planned: list[tuple[Run, bool]] = []
    skipped: list[dict[str, Any]] = []
    for line, record in records_of(content, agent or ""):
        if not isinstance(record, dict):
            raise InvalidRequest.of_field(f"line {line}", "must be an object {run_id or external_id, success}")
        key = next((name for name in ID_KEYS if record.get(name) not in (None, "")), None)
        if key is None:
            raise InvalidRequest.of_field(f"line {line}.run_id", "a run_id, external_id or task_id is required")
        names = ((agent,) if agent else ()) + VALUE_KEYS
        value_key = next((name for name in names if name in record), None)
        if value_key is None:
            raise InvalidRequest.of_field(f"line {line}.success", "is required")
        try:
            success = label_value(record[value_key])
        except ValueError:
            raise InvalidRequest.of_field(
                f"line {line}.{value_key}", "must be true/false or 1/0 (2: not executable)"
            ) from None
        identifier = str(record[key]).strip()
        if success is None:
            skipped.append({"line": line, "id": identifier, "reason": "labelled not executable"})
            continue
        if key == "run_id":
            runs = list(Run.objects.for_workspace(workspace).filter(public_id=identifier))
        elif batch is None:
            raise InvalidRequest.of_field("batch_id", f"is required to place the label of {key} {identifier!r}")
        else:
            runs = list(
                Run.objects.filter(
                    batch_item__batch=batch, batch_item__task__suite_task__external_id=identifier
                ).filter(status__in=Run.TERMINAL)
            )
        if not runs:
            skipped.append({"line": line, "id": identifier, "reason": "no such run"})
            continue
        planned.extend((run, success) for run in runs)
    with transaction.atomic():
        for run, success in planned:
            record_label(workspace, run, success=success, source=HumanLabel.Source.FILE, recorded_by=recorded_by)
    return LabelImport(imported=len(planned), skipped=skipped)


def random_sample(workspace: Workspace, *, size: int = 10, seed: object = None) -> list[Run]:
    """Unlabelled finished runs with a judgment, drawn at random (reproducibly with a seed), whatever the judge and
    the agent said: a sample whose labels estimate agreement without the bias of reviewing only disagreements."""
    if not isinstance(size, int) or not 1 <= size <= SAMPLE_MAX:
        raise InvalidRequest.of_field("size", f"must be between 1 and {SAMPLE_MAX}")
    candidates = list(
        Run.objects.for_workspace(workspace)
        .filter(status__in=(Run.Status.SUCCEEDED, Run.Status.FAILED), judgments__isnull=False, human_label__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)
        .distinct()
    )
    chosen = random.Random(str(seed) if seed is not None else None).sample(candidates, min(size, len(candidates)))
    by_pk = Run.objects.in_bulk(chosen)
    return [by_pk[pk] for pk in chosen]
