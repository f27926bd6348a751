"""How Pilothouse's runs, sessions and events read as Browser Use v4 objects, and v4's launch fields as a launch's."""

import uuid
from typing import Any

from agent_platform import llm
from agent_platform.errors import ServiceError
from agent_platform.lib.money import exact_usd
from agent_platform.models import Workspace
from runs import event_types
from runs.models import Event, Run, Session

# Fixed, so a workspace's v4 id is the same on every call and every process (Pilothouse ids it by slug and pk).
WORKSPACE_NAMESPACE = uuid.UUID("6f1c2a34-3f0e-4d5e-9a51-6b0c7e7d2b10")

STATUS = {
    Run.Status.QUEUED: "queued",
    Run.Status.RUNNING: "running",
    Run.Status.SUCCEEDED: "completed",
    Run.Status.FAILED: "failed",
    Run.Status.CANCELLED: "cancelled",
}
# v4's terminal event types: Pilothouse's one run.finished, named by how the run ended (runs.event_types).
FINISHED_TYPE = event_types.RUN_FINISHED.v4_names
BROWSER_READY = event_types.BROWSER_READY.name
# v1's field names in a launch's refusal, as the v4 caller wrote them.
V4_FIELD = {
    "task": "task",
    "model": "model",
    "effort": "modelParams.output_config.effort",
    "thinking": "modelParams.thinking.type",
    "session_id": "sessionId",
    "output_schema": "outputSchema",
    "judge_context": "judge.context",
    "max_cost_usd": "maxCostUsd",
    "session_max_cost_usd": "maxCostUsd",
    "secrets": "secretBindings",
    "viewport_width": "browserSettings.screenWidth",
    "viewport_height": "browserSettings.screenHeight",
}


def workspace_uuid(workspace: Workspace | int) -> uuid.UUID:
    """The Pilothouse workspace's v4 id: derived from its primary key, so it never changes."""
    pk = workspace if isinstance(workspace, int) else workspace.pk
    return uuid.uuid5(WORKSPACE_NAMESPACE, f"workspace:{pk}")


def context_limit(model: str) -> int:
    """The model's input window from the Models API (0 when it cannot be asked: the summary still reads)."""
    profile = llm.model_profile(model)
    return (profile.max_input_tokens or 0) if profile is not None else 0


def run_summary(run: Run) -> dict[str, Any]:
    """A run as v4's RunSummary: `result` is the agent's output text, `output` its data (the text when none)."""
    judgments = list(run.judgments.all())
    error = f"{run.error_code}: {run.error_message}" if run.error_code else None
    return {
        "id": run.uuid,
        "task": run.task,
        "title": run.session.title or None,
        "model": run.model,
        "modelParams": model_params(run),
        "contextLimit": context_limit(run.model),
        "status": STATUS[Run.Status(run.status)],
        "result": run.output or None,
        "output": run.data if run.data is not None else (run.output or None),
        "outputSchema": run.session.output_schema,
        "error": error,
        "sessionId": run.session.uuid,
        "workspaceId": workspace_uuid(run.workspace_id),
        "attachedFileIds": None,
        "judgement": judgments[0].as_dict() if judgments else None,
        "totalInputTokens": run.usage_input + run.usage_cache_read + run.usage_cache_write,
        "totalOutputTokens": run.usage_output,
        "totalCostUsd": exact_usd(run.cost_usd),
        "createdAt": run.created_at,
        "updatedAt": run.finished_at or run.started_at or run.created_at,
    }


def model_params(run: Run) -> dict[str, Any] | None:
    """The run's effort and thinking mode in Anthropic's own parameter names, as v4's modelParams carries them."""
    params: dict[str, Any] = {}
    if run.thinking:
        params["thinking"] = {"type": run.thinking}
    if run.effort:
        params["output_config"] = {"effort": run.effort}
    return params or None


def session_info(session: Session, latest: Run) -> dict[str, Any]:
    """A session as v4's SessionInfo: its task and status are its latest run's."""
    return {
        "sessionId": session.uuid,
        "workspaceId": workspace_uuid(session.workspace_id),
        "latestRunId": latest.uuid,
        "task": latest.task,
        "title": session.title or None,
        "status": STATUS[Run.Status(latest.status)],
        "createdAt": session.created_at,
        "updatedAt": max(session.updated_at, latest.finished_at or latest.started_at or latest.created_at),
    }


def run_event(run: Run, event: Event, type: str | None = None) -> dict[str, Any]:
    """An event as v4's RunEvent: its id is the run's seq (v1's `seq`), its ts v1's processed_at."""
    return {
        "runId": run.uuid,
        "id": event.seq,
        "ts": event.processed_at,
        "type": type or v4_type(event),
        "data": event.payload,
    }


def v4_type(event: Event) -> str:
    if event.type == event_types.RUN_FINISHED.name:
        return FINISHED_TYPE.get(str(event.payload.get("status")), FINISHED_TYPE["failed"])
    return event.type


def judge_statements(context: str) -> list[str]:
    """v4's judge context (one text) as the judge's statements: one per non-empty line."""
    return [line.strip() for line in context.splitlines() if line.strip()]


def v4_refusal(error: ServiceError) -> ServiceError:
    """A launch's refusal naming the field as the v4 caller wrote it (maxCostUsd, not max_cost_usd)."""
    field = error.field or ""
    base = field.split("[", 1)[0].split(".", 1)[0]
    if base not in V4_FIELD or not error.message.startswith(field):
        return error
    renamed = V4_FIELD[base] + field[len(base) :]
    return type(error)(renamed + error.message[len(field) :], field=renamed, detail=error.detail)
