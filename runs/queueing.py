"""Which queued runs go to the workers, and in what order: each workspace's limits, and a fair pick across workspaces.

A launched run is *admitted* (given a runs-queue message) only while its workspace has fewer than
`max_concurrent_runs` runs admitted or running; the others wait in the database, queued, with a `run.waiting`
event, and are admitted in launch order as the workspace's runs end. So one workspace's batch puts at most its limit
of messages in the queue.

The messages themselves are interchangeable: a worker taking one claims the fairest admitted run, not necessarily the
one the message names. Fairest is the workspace with the fewest runs running, then the one whose last run started
longest ago, then the oldest run. Every admitted run has one message and every message claims one run, so none is
left behind; a workspace's single run starts at the next free worker slot, however many another workspace queued.
"""

from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef, Q
from django.utils import timezone

from agent_platform.errors import RateLimited
from agent_platform.models import Workspace

from .events import emit
from .models import Event, Run

# A full queue drains at the pace of runs; a minute is a fair first retry.
QUEUE_FULL_RETRY_AFTER_SECONDS = 60
# How many admitted runs a fair pick weighs; admitted runs are bounded by the workspaces' limits anyway.
PICK_WINDOW = 200


# A workspace's active runs by where they stand: what GET /api/v1/queue says and /metrics counts, each one Count.
IN_FLIGHT = {
    "running": Q(status=Run.Status.RUNNING),
    "queued": Q(status=Run.Status.QUEUED, admitted_at__isnull=False),  # a message sent: a free slot may take it
    "waiting": Q(status=Run.Status.QUEUED, admitted_at__isnull=True),  # behind the concurrency limit, no message
}


def in_flight_counts() -> dict[str, Count]:
    return {state: Count("id", filter=condition) for state, condition in IN_FLIGHT.items()}


@dataclass(frozen=True)
class QueueDepth:
    """A workspace's runs in flight and its limits."""

    running: int
    queued: int
    waiting: int
    max_concurrent_runs: int
    max_queued_runs: int


def concurrency_limit(workspace: Workspace) -> int:
    return workspace.max_concurrent_runs or settings.WORKSPACE_MAX_CONCURRENT_RUNS


def queued_limit(workspace: Workspace) -> int:
    return workspace.max_queued_runs or settings.WORKSPACE_MAX_QUEUED_RUNS


def depth(workspace: Workspace) -> QueueDepth:
    counts = Run.objects.filter(workspace=workspace).active().aggregate(**in_flight_counts())
    return QueueDepth(
        **counts, max_concurrent_runs=concurrency_limit(workspace), max_queued_runs=queued_limit(workspace)
    )


def refuse_beyond_queued_limit(workspace: Workspace) -> None:
    """Called in the launch's transaction: a workspace with max_queued_runs runs already queued takes no more."""
    limit = queued_limit(workspace)
    queued = Run.objects.filter(workspace=workspace, status=Run.Status.QUEUED).count()
    if queued >= limit:
        raise RateLimited(
            f"This workspace already has {queued} runs queued, its limit (max_queued_runs {limit}); launch again "
            "when some have started.",
            detail={"queued": queued, "max_queued_runs": limit},
            headers={"Retry-After": str(QUEUE_FULL_RETRY_AFTER_SECONDS)},
        )


def admit(workspace_id: int) -> list[int]:
    """Mark the workspace's waiting runs admitted, oldest first, while it is under its concurrency limit, and return
    them (the caller enqueues them once this commits: lifecycle.admit); the rest say once that they wait. Serialized
    per workspace (a row lock; SQLite's write lock does the same), so two admits never exceed the limit together."""
    with transaction.atomic():
        workspace = Workspace.objects.select_for_update().filter(pk=workspace_id).first()
        if workspace is None:
            return []
        active = Run.objects.filter(workspace=workspace).active()
        in_flight = active.exclude(status=Run.Status.QUEUED, admitted_at__isnull=True).count()
        waiting = list(active.filter(status=Run.Status.QUEUED, admitted_at__isnull=True).order_by("pk"))
        slots = max(concurrency_limit(workspace) - in_flight, 0)
        admitted = [run.pk for run in waiting[:slots]]
        if admitted:
            Run.objects.filter(pk__in=admitted).update(admitted_at=timezone.now())
        told = set(
            Event.objects.filter(
                run__in=waiting[slots:], type="run.waiting", payload__reason="workspace_limit"
            ).values_list("run_id", flat=True)
        )
        for run in waiting[slots:]:
            if run.pk not in told:
                emit(
                    run,
                    "run.waiting",
                    {"reason": "workspace_limit", "max_concurrent_runs": concurrency_limit(workspace)},
                )
    return admitted


def waiting_workspaces() -> list[int]:
    """Workspaces with runs waiting for admission: the reaper admits in each, a safety net for an admit that did not
    happen after a run's end (its process died between the end and the admit)."""
    return list(
        Run.objects.filter(status=Run.Status.QUEUED, admitted_at__isnull=True)
        .order_by()
        .values_list("workspace_id", flat=True)
        .distinct()
    )


def fairest(exclude: set[int]) -> int | None:
    """The admitted run the next free worker slot should take (see the module's docstring), or None."""
    earlier_active = Run.objects.filter(
        session_id=OuterRef("session_id"),
        pk__lt=OuterRef("pk"),
        status__in=[Run.Status.QUEUED, Run.Status.RUNNING],
    )
    candidates = list(
        Run.objects.filter(status=Run.Status.QUEUED, admitted_at__isnull=False)
        .exclude(pk__in=exclude)
        .exclude(Exists(earlier_active))  # a follow-up behind its session's earlier run is not ready
        .order_by("pk")
        .values_list("pk", "workspace_id")[:PICK_WINDOW]
    )
    if not candidates:
        return None
    workspaces = {workspace_id for _, workspace_id in candidates}
    running = dict(
        Run.objects.filter(workspace_id__in=workspaces, status=Run.Status.RUNNING)
        .order_by()
        .values("workspace_id")
        .annotate(count=Count("id"))
        .values_list("workspace_id", "count")
    )
    last_started = dict(
        Run.objects.filter(workspace_id__in=workspaces, started_at__isnull=False)
        .order_by()
        .values("workspace_id")
        .annotate(last=Max("started_at"))
        .values_list("workspace_id", "last")
    )
    epoch = timezone.now().replace(year=1970)

    def fairness(candidate: tuple[int, int]) -> tuple[int, object, int]:
        pk, workspace_id = candidate
        return running.get(workspace_id, 0), last_started.get(workspace_id) or epoch, pk

    return min(candidates, key=fairness)[0]
