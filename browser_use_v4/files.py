"""v4's /workspaces (files) and /runs/{id}/attachments on Pilothouse's files (runs.files).

A Pilothouse workspace is one v4 workspace: its id is the one a run's `workspaceId` says (mapping.workspace_uuid), and
its files are the workspace's uploads (at `uploads/NAME`) and what its runs downloaded (at `runs/RUN/NAME`). An upload
is the SDK's own two steps: POST …/files/upload answers a signed URL per file, pinned to its name, size and workspace
for five minutes; a PUT of exactly that many bytes to it stores the file under the id the first step gave, which a run
names in `attachedFileIds`. A listing's `url`s are signed the same way, for a minute."""

import tempfile
import uuid
from typing import IO, Any

from django.conf import settings
from django.core import signing
from django.db import transaction
from django.db.models import Sum
from django.http import FileResponse, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictBool, StrictInt, StrictStr

from agent_platform.api import ApiRequest
from agent_platform.errors import Conflict, InvalidRequest, NotFound, PayloadTooLarge, ServiceError
from agent_platform.models import Workspace
from runs.files import (
    WORKSPACE_FILES_MAX_BYTES,
    StoredFile,
    attachment,
    content_type_of,
    sanitize_name,
    store_file,
)
from runs.models import Run

from . import mapping
from .api import ERRORS, lookup
from .unsupported import NotInPilothouse

router = Router(tags=["workspaces"])

UPLOAD_SALT = "browser_use_v4.upload"
DOWNLOAD_SALT = "browser_use_v4.download"
UPLOAD_URL_SECONDS = 300
DOWNLOAD_URL_SECONDS = 60
UPLOADS_PER_REQUEST = 10
LIST_DEFAULT = 100
LIST_MAX = 1000
COPY_CHUNK_BYTES = 1024 * 1024
UPLOADS_FOLDER = "uploads/"
RUNS_FOLDER = "runs/"


# --- the workspace ---------------------------------------------------------------------------------------------------


class WorkspaceIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: StrictStr | None = None


class WorkspaceInfo(Schema):
    id: uuid.UUID
    name: str | None
    archived: bool
    createdAt: Any
    updatedAt: Any


class WorkspaceSizeInfo(Schema):
    usedBytes: int
    maxBytes: int


def workspace_info(workspace: Workspace) -> dict[str, Any]:
    return {
        "id": mapping.workspace_uuid(workspace),
        "name": workspace.name,
        "archived": False,
        "createdAt": workspace.created_at,
        "updatedAt": workspace.created_at,
    }


def own_workspace(request: ApiRequest, workspace_id: str) -> Workspace:
    """The caller's workspace, if `workspace_id` is its v4 id; any other id is as unknown (404)."""
    if workspace_id != str(mapping.workspace_uuid(request.workspace)):
        try:
            same = uuid.UUID(workspace_id) == mapping.workspace_uuid(request.workspace)
        except ValueError:
            same = False
        if not same:
            raise NotFound(f"Workspace {workspace_id[:60]} not found")
    return request.workspace


@router.post("/workspaces", response={201: WorkspaceInfo, **ERRORS}, summary="The API key's workspace")
def create_workspace(request: ApiRequest, body: WorkspaceIn) -> Status[dict[str, Any]]:
    """A Pilothouse workspace is one v4 workspace: this answers the API key's own (its name unchanged), whose id a
    run's workspaceId and the file calls take."""
    return Status(201, workspace_info(request.workspace))


@router.get("/workspaces/{workspace_id}", response={200: WorkspaceInfo, **ERRORS}, summary="The workspace")
def get_workspace(request: ApiRequest, workspace_id: str) -> dict[str, Any]:
    return workspace_info(own_workspace(request, workspace_id))


@router.patch("/workspaces/{workspace_id}", response={200: WorkspaceInfo, **ERRORS}, summary="Not in Pilothouse")
def update_workspace(request: ApiRequest, workspace_id: str, body: WorkspaceIn) -> dict[str, Any]:
    own_workspace(request, workspace_id)
    raise NotInPilothouse("renaming a workspace through v4 (its name is set on Pilothouse's settings page)")


@router.delete("/workspaces/{workspace_id}", response={204: None, **ERRORS}, summary="Not in Pilothouse")
def delete_workspace(request: ApiRequest, workspace_id: str) -> Status[None]:
    own_workspace(request, workspace_id)
    raise NotInPilothouse("archiving a workspace through v4 (delete its files one by one)")


@router.get("/workspaces/{workspace_id}/size", response={200: WorkspaceSizeInfo, **ERRORS}, summary="Storage used")
def workspace_size(request: ApiRequest, workspace_id: str) -> dict[str, Any]:
    workspace = own_workspace(request, workspace_id)
    return {"usedBytes": used_bytes(workspace), "maxBytes": WORKSPACE_FILES_MAX_BYTES}


def used_bytes(workspace: Workspace) -> int:
    return int(StoredFile.objects.for_workspace(workspace).aggregate(total=Sum("size"))["total"] or 0)


# --- listing and deleting --------------------------------------------------------------------------------------------


class WorkspaceFileInfo(Schema):
    path: str
    size: int
    lastModified: Any
    url: str | None = None


class WorkspaceFileListOut(Schema):
    files: list[WorkspaceFileInfo]
    nextCursor: str | None
    hasMore: bool


class FileFilters(Schema):
    prefix: str | None = Field(None, max_length=1000)
    limit: int = Field(LIST_DEFAULT, ge=1, le=LIST_MAX)
    cursor: str | None = Field(None, max_length=40)
    includeUrls: bool = False
    contentDisposition: str | None = Field(None, max_length=20)


def file_path(row: StoredFile, run_uuids: dict[int, uuid.UUID]) -> str:
    """Where a file is in the v4 workspace: an upload by its name, a download under its run's v4 id."""
    if row.run_id is None:
        return UPLOADS_FOLDER + row.name
    return f"{RUNS_FOLDER}{run_uuids[row.run_id]}/{row.name}"


def signed_url(request: HttpRequest, kind: str, token: str) -> str:
    return request.build_absolute_uri(f"/api/v4/{kind}/{token}")


@router.get("/workspaces/{workspace_id}/files", response={200: WorkspaceFileListOut, **ERRORS}, summary="Files")
def list_files(request: ApiRequest, workspace_id: str, filters: Query[FileFilters]) -> dict[str, Any]:
    """Oldest first; `cursor` is the previous page's nextCursor. With includeUrls each file has a download URL good
    for a minute (no API key needed: the URL is signed)."""
    workspace = own_workspace(request, workspace_id)
    rows = StoredFile.objects.for_workspace(workspace).order_by("id")
    if filters.cursor:
        if not filters.cursor.isdigit():
            raise InvalidRequest.of_field("cursor", "is not a cursor this API gave")
        rows = rows.filter(id__gt=int(filters.cursor))
    run_uuids = dict(
        Run.objects.for_workspace(workspace).filter(downloaded_files__isnull=False).values_list("id", "uuid")
    )
    found: list[tuple[StoredFile, str]] = []
    for row in rows.iterator():
        path = file_path(row, run_uuids)
        if filters.prefix and not path.startswith(filters.prefix):
            continue
        found.append((row, path))
        if len(found) > filters.limit:
            break
    page = found[: filters.limit]
    files = []
    for row, path in page:
        info: dict[str, Any] = {"path": path, "size": row.size, "lastModified": row.created_at}
        if filters.includeUrls:
            token = signing.dumps({"f": row.pk, "w": workspace.pk}, salt=DOWNLOAD_SALT, compress=True)
            info["url"] = signed_url(request, "downloads", token)
        files.append(info)
    has_more = len(found) > filters.limit
    return {"files": files, "nextCursor": str(page[-1][0].pk) if has_more else None, "hasMore": has_more}


class DeleteFilter(Schema):
    path: str = Field(..., min_length=1, max_length=1000)


@router.delete("/workspaces/{workspace_id}/files", response={204: None, **ERRORS}, summary="Delete a file")
def delete_file(request: ApiRequest, workspace_id: str, filters: Query[DeleteFilter]) -> Status[None]:
    """Deletes the file at exactly `path` (every file there: a run may have downloaded two of one name), its bytes
    with it; runs given it no longer have it."""
    workspace = own_workspace(request, workspace_id)
    rows = files_at(workspace, filters.path)
    if not rows:
        raise NotFound(f"No file at {filters.path[:200]!r} in this workspace")
    with transaction.atomic():
        for row in rows:
            row.delete()
    return Status(204, None)


def files_at(workspace: Workspace, path: str) -> list[StoredFile]:
    files = StoredFile.objects.for_workspace(workspace)
    if path.startswith(UPLOADS_FOLDER):
        return list(files.filter(run__isnull=True, name=path[len(UPLOADS_FOLDER) :]))
    if path.startswith(RUNS_FOLDER) and path.count("/") >= 2:
        _, run_id, name = path.split("/", 2)
        try:
            run_uuid = uuid.UUID(run_id)
        except ValueError:
            return []
        return list(files.filter(run__uuid=run_uuid, name=name))
    return []


# --- uploading -------------------------------------------------------------------------------------------------------


class UploadItemIn(Schema):
    model_config = ConfigDict(extra="forbid")
    name: StrictStr = Field(..., min_length=1, max_length=255)
    contentType: StrictStr | None = Field("application/octet-stream", max_length=255)
    size: StrictInt = Field(..., ge=1)


class UploadIn(Schema):
    model_config = ConfigDict(extra="forbid")
    files: list[UploadItemIn] = Field(..., min_length=1, max_length=UPLOADS_PER_REQUEST)
    allowOverrides: StrictBool = True


class UploadItemOut(Schema):
    id: uuid.UUID
    name: str
    storedName: str
    path: str
    willOverride: bool
    uploadUrl: str


class UploadOut(Schema):
    files: list[UploadItemOut]


@router.post(
    "/workspaces/{workspace_id}/files/upload",
    response={200: UploadOut, 409: Any, **ERRORS},
    summary="Signed upload URLs",
)
def presign_uploads(request: ApiRequest, workspace_id: str, body: UploadIn) -> dict[str, Any]:
    """One signed PUT URL per file (five minutes), pinned to its size, which may be at most FILE_UPLOAD_MAX_BYTES;
    the workspace's files together at most its quota (GET …/size). A name already there is replaced when the bytes
    arrive, unless allowOverrides is false (409 here, before anything is kept)."""
    workspace = own_workspace(request, workspace_id)
    limit = settings.FILE_UPLOAD_MAX_BYTES
    for index, item in enumerate(body.files):
        if item.size > limit:
            raise PayloadTooLarge(
                f"files[{index}].size: {item.size} bytes is more than the limit of {limit} bytes.",
                field=f"files[{index}].size",
                detail={"limit": limit},
            )
    wanted = sum(item.size for item in body.files)
    if used_bytes(workspace) + wanted > WORKSPACE_FILES_MAX_BYTES:
        raise PayloadTooLarge(
            f"The workspace's files would pass its quota of {WORKSPACE_FILES_MAX_BYTES} bytes; delete some first.",
            detail={"limit": WORKSPACE_FILES_MAX_BYTES},
        )
    uploads = StoredFile.objects.for_workspace(workspace).filter(run__isnull=True)
    out = []
    for item in body.files:
        stored = sanitize_name(item.name)
        exists = uploads.filter(name=stored).exists()
        if exists and not body.allowOverrides:
            raise Conflict(f"{UPLOADS_FOLDER}{stored} exists and allowOverrides is false.")
        file_uuid = uuid.uuid4()
        claim = {"w": workspace.pk, "u": str(file_uuid), "n": stored, "s": item.size, "o": body.allowOverrides}
        token = signing.dumps(claim, salt=UPLOAD_SALT, compress=True)
        out.append(
            {
                "id": file_uuid,
                "name": item.name,
                "storedName": stored,
                "path": UPLOADS_FOLDER + stored,
                "willOverride": exists,
                "uploadUrl": signed_url(request, "uploads", token),
            }
        )
    return {"files": out}


def detail(status: int, message: str) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


def copy_body(request: HttpRequest, size: int) -> IO[bytes]:
    """The request's body in a temporary file, refused unless it is exactly `size` bytes (read in chunks, so a body
    that says less than it sends is cut at one chunk past the size)."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=COPY_CHUNK_BYTES)  # noqa: SIM115  (the caller closes it)
    received = 0
    while chunk := request.read(COPY_CHUNK_BYTES):
        received += len(chunk)
        if received > size:
            spool.close()
            raise PayloadTooLarge(f"The body is larger than the {size} bytes this upload URL was made for.")
        spool.write(chunk)
    if received != size:
        spool.close()
        raise InvalidRequest(f"The body is {received} bytes; this upload URL was made for exactly {size}.")
    spool.seek(0)
    return spool


@csrf_exempt
def receive_upload(request: HttpRequest, token: str) -> JsonResponse:
    """A PUT of a file's bytes to the URL presign_uploads signed: stored under the id it gave, replacing an upload of
    the same name (when allowed). Expired, altered or used again: refused."""
    if request.method != "PUT":
        return detail(405, f"{request.method} is not allowed here; PUT the file's bytes.")
    try:
        claim = signing.loads(token, salt=UPLOAD_SALT, max_age=UPLOAD_URL_SECONDS)
    except signing.SignatureExpired:
        return detail(403, "This upload URL has expired; ask for another (POST …/files/upload).")
    except signing.BadSignature:
        return detail(403, "This is not an upload URL this server signed.")
    workspace = Workspace.objects.filter(pk=claim["w"]).first()
    if workspace is None:
        return detail(404, "The workspace of this upload URL no longer exists.")
    declared = request.META.get("CONTENT_LENGTH")
    if declared and declared.isdigit() and int(declared) != claim["s"]:
        return detail(400, f"Content-Length is {declared}; this upload URL was made for exactly {claim['s']} bytes.")
    try:
        body = copy_body(request, claim["s"])
    except ServiceError as error:
        return detail(error.status, error.message)
    try:
        with transaction.atomic():
            if StoredFile.objects.filter(uuid=claim["u"]).exists():
                return detail(409, "This upload URL was used already; ask for another.")
            earlier = StoredFile.objects.for_workspace(workspace).filter(run__isnull=True, name=claim["n"])
            if earlier.exists() and not claim["o"]:
                return detail(409, f"{UPLOADS_FOLDER}{claim['n']} exists and allowOverrides was false.")
            for row in earlier:
                row.delete()
            row = store_file(workspace, body, name=claim["n"], source=StoredFile.Source.UPLOAD)
            StoredFile.objects.filter(pk=row.pk).update(uuid=claim["u"])
    finally:
        body.close()
    return JsonResponse({}, status=200)


def send_download(request: HttpRequest, token: str) -> FileResponse | JsonResponse:
    """A file's bytes through a listing's signed URL (a minute), as an attachment."""
    try:
        claim = signing.loads(token, salt=DOWNLOAD_SALT, max_age=DOWNLOAD_URL_SECONDS)
    except signing.SignatureExpired:
        return detail(403, "This download URL has expired; list the files again for another.")
    except signing.BadSignature:
        return detail(403, "This is not a download URL this server signed.")
    row = StoredFile.objects.filter(pk=claim["f"], workspace_id=claim["w"]).first()
    if row is None:
        return detail(404, "The file is no longer in the workspace.")
    return attachment(row)


# --- a run's files ---------------------------------------------------------------------------------------------------


class RunAttachment(Schema):
    id: uuid.UUID
    name: str
    contentType: str
    sizeBytes: int
    status: str


class RunAttachmentsOut(Schema):
    attachments: list[RunAttachment]


@router.get(
    "/runs/{run_id}/attachments", response={200: RunAttachmentsOut, **ERRORS}, tags=["runs"], summary="Downloads"
)
def run_attachments(request: ApiRequest, run_id: str) -> dict[str, Any]:
    """What the run's browser downloaded, oldest first (their bytes: GET …/workspaces/{id}/files?includeUrls=true,
    under runs/{runId}/)."""
    run = lookup(Run.objects.for_workspace(request.workspace), run_id, "Run")
    return {
        "attachments": [
            {
                "id": row.uuid,
                "name": row.name,
                "contentType": row.content_type or content_type_of(row.name),
                "sizeBytes": row.size,
                "status": "uploaded",
            }
            for row in run.downloaded_files.all()
        ]
    }
