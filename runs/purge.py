"""Purge and retention: removing what runs produced (their events, screenshots and live-view images, traces, files,
checkpoints, questions and messages, the task, output, data and the judge's reasons) while keeping what they cost.

A purged run keeps its row with its status, timings, usage and cost, and its model requests stay: the usage page, the
admin's totals and invoices read those, so a purge never changes a bill. A session is purged on demand (its page,
/api/v1, v4); a workspace's `retention_days` purges its runs that ended longer ago, and deletes its uploads, from the
beat (runtime.tasks.apply_retention). Bytes in storage (a local disk or the bucket) go once the database commits."""

from datetime import timedelta

from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import Conflict
from agent_platform.models import Workspace
from judge.models import Judgment, Outcome, OutcomeEvaluation

from .files import StoredFile
from .models import Event, Run, RunCheckpoint, RunInput, RunMessage, Session, SessionShare
from .traces import trace_path

# The folders a run's own objects are kept under in the default storage (runs.screenshots, runs.traces).
RUN_FOLDERS = ("screenshots/{run}", "traces/{run}")
# Runs purged by one retention pass, at most: the next pass (the beat's next tick) goes on from there.
RETENTION_BATCH = 200


def delete_folder(path: str) -> None:
    """Every object under `path` in the default storage; a folder that was never written is nothing to do."""
    try:
        folders, names = default_storage.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in names:
        default_storage.delete(f"{path}/{name}")
    for folder in folders:
        delete_folder(f"{path}/{folder}")


def delete_run_objects(run_public_id: str) -> None:
    for template in RUN_FOLDERS:
        delete_folder(template.format(run=run_public_id))
    default_storage.delete(trace_path(run_public_id))


def purge_run(run: Run) -> None:
    """Remove a finished run's content; its usage, cost, status and timings stay. A run still going is conflict (it
    would write more): cancel it first."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if not locked.is_finished:
            raise Conflict(f"Run {locked.public_id} is {locked.status}; cancel it before purging it.")
        Event.objects.filter(run=locked).delete()
        RunInput.objects.filter(run=locked).delete()
        RunMessage.objects.filter(run=locked).delete()
        RunCheckpoint.objects.filter(run=locked).delete()
        # Deleting a file's row deletes its bytes once this commits (runs.files.delete_stored_bytes).
        for row in StoredFile.objects.filter(run=locked):
            row.delete()
        Judgment.objects.filter(run=locked).update(reason="")
        OutcomeEvaluation.objects.filter(outcome__run=locked).update(explanation="")
        Outcome.objects.filter(run=locked).update(description="", rubric="")
        Run.objects.filter(pk=locked.pk).update(
            task="",
            start_url="",
            output="",
            data=None,
            error_message="",
            secrets={},
            secret_domains={},
            metadata={},
            judge_context=[],
            purged_at=timezone.now(),
        )
        public_id = locked.public_id
        transaction.on_commit(lambda: delete_run_objects(public_id))
    run.refresh_from_db()


def purge_session(session: Session) -> list[str]:
    """Purge every run of the session, and its kept browser state and share link. Conflict while one of its runs is
    going (nothing is purged then). Returns the runs' ids."""
    with transaction.atomic():
        runs = list(Run.objects.select_for_update().filter(session=session).order_by("created_at", "id"))
        going = [run.public_id for run in runs if not run.is_finished]
        if going:
            raise Conflict(f"Session {session.public_id} has a run going ({going[0]}); cancel it before purging.")
        for run in runs:
            purge_run(run)
        Session.objects.filter(pk=session.pk).update(browser_state=None, title="")
        SessionShare.objects.filter(session=session).delete()
    return [run.public_id for run in runs]


def retention_cutoff(workspace: Workspace) -> object:
    return timezone.now() - timedelta(days=workspace.retention_days or 0)


def apply_retention(batch: int = RETENTION_BATCH) -> dict[str, int]:
    """One pass of every workspace's retention: its runs that ended more than `retention_days` ago are purged (up to
    `batch` a pass) and its uploaded files older than that deleted. A workspace with no number keeps everything."""
    purged = files = 0
    for workspace in Workspace.objects.filter(retention_days__isnull=False).order_by("pk"):
        cutoff = retention_cutoff(workspace)
        old_runs = (
            Run.objects.for_workspace(workspace)
            .finished()
            .filter(purged_at__isnull=True, finished_at__lt=cutoff)
            .order_by("finished_at", "id")[: max(0, batch - purged)]
        )
        for run in old_runs:
            try:
                purge_run(run)
            except Conflict:  # pragma: no cover  (finished() already left out the runs still going)
                continue
            purged += 1
        old_uploads = StoredFile.objects.for_workspace(workspace).filter(
            source=StoredFile.Source.UPLOAD, created_at__lt=cutoff
        )
        with transaction.atomic():
            for row in old_uploads:
                row.delete()
                files += 1
    return {"runs": purged, "files": files}
