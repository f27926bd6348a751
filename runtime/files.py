"""A run's files on the worker: the directory holding only the files the run was given (copied from storage when it
starts, removed when it ends), which the agent's file_upload may read, and keeping what its browser downloads."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from runs.files import StoredFile, open_file, store_file
from runs.models import Run

COPY_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class GivenFile:
    """A file the run was given, and where the agent finds it on this worker."""

    row: StoredFile
    path: Path


def run_directory(run: Run) -> Path:
    return Path(settings.RUN_FILES_DIR) / run.public_id


def prepare_uploads(run: Run) -> tuple[Path | None, list[GivenFile]]:
    """Copy the run's given files from storage into its own upload directory; (None, []) when it was given none.

    Each file keeps its sanitized name, in a directory named by its id (so two of the same name never meet)."""
    rows = list(run.given_files.order_by("created_at", "id"))
    if not rows:
        return None, []
    directory = run_directory(run) / "uploads"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True, mode=0o700)
    given = []
    for row in rows:
        (directory / row.public_id).mkdir(mode=0o700)
        path = directory / row.public_id / row.name
        with open_file(row) as source, path.open("wb") as target:
            shutil.copyfileobj(source, target, COPY_CHUNK_BYTES)
        given.append(GivenFile(row, path))
    return directory, given


def remove_run_directory(run: Run) -> None:
    shutil.rmtree(run_directory(run), ignore_errors=True)


def given_files_text(given: list[GivenFile]) -> str:
    """What the agent's first message says of its files: each one's path for file_upload, size and type."""
    lines = [f"- {item.path} ({item.row.size} bytes, {item.row.content_type})" for item in given]
    return (
        "Files you were given, to set on a file input with file_upload (give these paths):\n"
        + "\n".join(lines)
        + "\nFiles the page makes you download are kept for the operator; each result says what arrived."
    )


def keeper(run: Run) -> Any:
    """The download keep callback of a run: store the file as the run's (through the storage API), off the loop."""

    def keep(path: str, suggested_name: str, url: str) -> dict[str, Any]:
        try:
            with open(path, "rb") as handle:
                row = store_file(run.workspace, handle, name=suggested_name, source=StoredFile.Source.DOWNLOAD, run=run)
            return row.as_dict()
        finally:
            close_old_connections()

    return keep
