"""A run's files: what its browser downloaded and what an operator uploaded for runs to use. Bytes live in Django's
default storage (local disk or object storage, whatever STORAGE configures), rows here; nothing assumes a local path.
"""

from __future__ import annotations

import hashlib
import mimetypes
import re
import unicodedata
from collections.abc import Iterable
from typing import IO, Any
from uuid import uuid4

from django.conf import settings
from django.core.files.base import File
from django.core.files.storage import default_storage
from django.db import models, transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.http import FileResponse
from django.utils import timezone
from ninja import Schema

from agent_platform import ids
from agent_platform.artifacts import serve_stored_file
from agent_platform.errors import InvalidRequest, PayloadTooLarge
from agent_platform.lib.timestamps import rfc3339
from agent_platform.models import Workspace

from .models import Run

# A file name, in UTF-8 bytes, as most file systems allow it (and as Content-Disposition carries it).
NAME_MAX_BYTES = 255
FALLBACK_NAME = "file"
# Characters a name may not hold on some file system a downloader saves to (Windows), or that separate paths.
RESERVED = re.compile(r'[<>:"|?*\\/]')
HASH_CHUNK_BYTES = 1024 * 1024
FILE_IDS_MAX = 20
# What a workspace's files may take together (uploads and downloads; the v4 API reports it as the quota).
WORKSPACE_FILES_MAX_BYTES = 10 * 1024**3


def file_id() -> str:
    return ids.new_public_id("file")


def sanitize_name(raw: object) -> str:
    """A name safe to store, show and send in Content-Disposition: its last path component only (no directories,
    no `..`), without control or format characters, reserved characters replaced, no leading or trailing dots or
    spaces, at most 255 UTF-8 bytes keeping its extension; `file` when nothing is left."""
    text = unicodedata.normalize("NFC", raw if isinstance(raw, str) else "")
    text = re.split(r"[\\/]", text)[-1]
    # control (Cc), format (Cf: bidi overrides that disguise an extension), line and paragraph separators, surrogates
    text = "".join(
        " " if unicodedata.category(char) in ("Zl", "Zp") else char
        for char in text
        if unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn")
    )
    text = RESERVED.sub("_", text)
    text = re.sub(r"\s+", " ", text).strip(" .")
    if not text:
        return FALLBACK_NAME
    if len(text.encode()) > NAME_MAX_BYTES:
        stem, dot, extension = text.rpartition(".")
        if not dot or not stem or len(extension.encode()) > 16:
            stem, extension = text, ""
        suffix = f".{extension}" if extension else ""
        budget = NAME_MAX_BYTES - len(suffix.encode())
        stem = stem.encode()[:budget].decode("utf-8", errors="ignore").rstrip(" .")
        text = (stem or FALLBACK_NAME) + suffix
    return text


def content_type_of(name: str) -> str:
    """The media type a name says (the page's or the client's own claim is not trusted); octet-stream otherwise."""
    guessed, _encoding = mimetypes.guess_type(name, strict=False)
    return guessed or "application/octet-stream"


class StoredFileQuerySet(models.QuerySet["StoredFile"]):
    def for_workspace(self, workspace: Workspace) -> StoredFileQuerySet:
        return self.filter(workspace=workspace)


class StoredFile(models.Model):
    """A file of a workspace: downloaded by a run's browser (`run` set), or uploaded for runs to use (`run` null;
    the runs given it are `runs`). Its bytes are at `storage_path` in the default storage, never at its name."""

    class Source(models.TextChoices):
        DOWNLOAD = "download"
        UPLOAD = "upload"

    public_id = models.CharField(max_length=40, unique=True, default=file_id, editable=False)
    # The id Browser Use's v4 API knows the file by (an upload's id, an attachment's id): its ids are UUIDs.
    uuid = models.UUIDField(unique=True, null=True, default=uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="files")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="downloaded_files")
    # The runs launched with this file (file_ids): their agents may set it on a file input.
    runs = models.ManyToManyField(Run, blank=True, related_name="given_files")
    name = models.CharField(max_length=NAME_MAX_BYTES)
    size = models.PositiveBigIntegerField()
    content_type = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64)
    source = models.CharField(max_length=10, choices=Source.choices)
    storage_path = models.CharField(max_length=300, editable=False)
    created_at = models.DateTimeField(default=timezone.now)

    objects = StoredFileQuerySet.as_manager()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["workspace", "-created_at"], name="file_ws_created"),
            models.Index(fields=["run", "created_at"], name="file_run_created"),
        ]

    def __str__(self) -> str:
        return self.public_id

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.public_id,
            "name": self.name,
            "size": self.size,
            "content_type": self.content_type,
            "sha256": self.sha256,
            "source": self.source,
            "created_at": rfc3339(self.created_at),
        }


@receiver(post_delete, sender=StoredFile, dispatch_uid="runs.files.delete_stored_bytes")
def delete_stored_bytes(sender: type[StoredFile], instance: StoredFile, **_kwargs: Any) -> None:
    """A file's row gone (with its run or workspace) takes its bytes with it, once that commits: a rolled-back delete
    keeps both."""
    path = instance.storage_path
    transaction.on_commit(lambda: default_storage.delete(path))


def storage_path(workspace_id: int, public_id: str) -> str:
    """Where a file's bytes are: by workspace and id, never by its (outside-chosen) name."""
    return f"files/{workspace_id}/{public_id}"


def digest(handle: IO[bytes] | File[Any]) -> tuple[str, int]:
    """The SHA-256 and size of what `handle` holds from its current position; it is rewound afterwards."""
    start = handle.tell()
    hasher = hashlib.sha256()
    size = 0
    while chunk := handle.read(HASH_CHUNK_BYTES):
        hasher.update(chunk)
        size += len(chunk)
    handle.seek(start)
    return hasher.hexdigest(), size


def store_file(
    workspace: Workspace, handle: IO[bytes] | File[Any], *, name: object, source: str, run: Run | None = None
) -> StoredFile:
    """Keep the bytes `handle` holds under a new file id (through the storage API) and record the file."""
    clean = sanitize_name(name)
    sha256, size = digest(handle)
    row = StoredFile(
        workspace=workspace,
        run=run,
        name=clean,
        size=size,
        content_type=content_type_of(clean),
        sha256=sha256,
        source=source,
    )
    row.storage_path = storage_path(workspace.pk, row.public_id)
    saved = default_storage.save(row.storage_path, File(handle, name=row.public_id))
    row.storage_path = saved  # a storage that renames on collision says where it put it
    try:
        row.save()
    except BaseException:
        default_storage.delete(saved)
        raise
    return row


def upload_too_large() -> PayloadTooLarge:
    limit = settings.FILE_UPLOAD_MAX_BYTES
    return PayloadTooLarge(f"The file is larger than the limit of {limit} bytes.", detail={"limit": limit})


def upload_files(workspace: Workspace, uploads: Iterable[Any]) -> list[StoredFile]:
    """Store the launch form's uploaded files (Django UploadedFile objects), each within FILE_UPLOAD_MAX_BYTES."""
    uploads = list(uploads)
    limit = settings.FILE_UPLOAD_MAX_BYTES
    for upload in uploads:
        if upload.size > limit:
            raise PayloadTooLarge(
                f"files: {sanitize_name(upload.name)!r} is larger than the limit of {limit} bytes.",
                field="files",
                detail={"limit": limit},
            )
    return [store_file(workspace, upload, name=upload.name, source=StoredFile.Source.UPLOAD) for upload in uploads]


def open_file(row: StoredFile) -> IO[bytes]:
    handle: IO[bytes] = default_storage.open(row.storage_path, "rb")
    return handle


def attachment(row: StoredFile) -> FileResponse:
    """The file's bytes as a download, never rendered by the browser: attachment with its sanitized name (RFC 6266
    filename* for non-ASCII), nosniff, and a sandbox in case a browser renders it anyway; 404 when its bytes are gone
    from storage."""
    response = serve_stored_file(
        row.storage_path,
        content_type=row.content_type,
        missing="This file's bytes are no longer stored.",
        download_name=row.name,
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


def clean_file_ids(workspace: Workspace, file_ids: object) -> list[StoredFile]:
    """The workspace's files a launch names (in order, once each); an unknown or another workspace's id is
    invalid_request naming file_ids, without saying which of the two it is."""
    if file_ids is None:
        return []
    if not isinstance(file_ids, list) or not all(isinstance(value, str) for value in file_ids):
        raise InvalidRequest.of_field("file_ids", "must be a list of file ids (file_…)")
    if len(file_ids) > FILE_IDS_MAX:
        raise InvalidRequest.of_field("file_ids", f"at most {FILE_IDS_MAX} files may be given to a run")
    wanted = list(dict.fromkeys(file_ids))
    found = {row.public_id: row for row in StoredFile.objects.for_workspace(workspace).filter(public_id__in=wanted)}
    missing = [value for value in wanted if value not in found]
    if missing:
        shown = ", ".join(repr(value[:60]) for value in missing[:5])
        raise InvalidRequest.of_field(
            "file_ids", f"no file {shown} in this workspace", detail={"unknown": [v[:60] for v in missing[:20]]}
        )
    return [found[value] for value in wanted]


def files_of_run(run: Run) -> list[StoredFile]:
    """What a run has: the files it was given, then what its browser downloaded (the model's order: oldest first)."""
    return [*run.given_files.all(), *run.downloaded_files.all()]


class FileOut(Schema):
    """A file as every door shows it (StoredFile.as_dict)."""

    id: str
    name: str
    size: int
    content_type: str
    sha256: str
    source: str
    created_at: str


class FileListOut(Schema):
    files: list[FileOut]


def run_files_out(run: Run) -> dict[str, Any]:
    """A run's files as FileListOut shows them: the v1 API's and MCP's answer."""
    return {"files": [row.as_dict() for row in files_of_run(run)]}


def describe(rows: Iterable[StoredFile]) -> str:
    """One line per file, as the agent and the judge read it: name, size, type."""
    return "\n".join(f"- {row.name} ({row.size} bytes, {row.content_type})" for row in rows)
