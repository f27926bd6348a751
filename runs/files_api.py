"""The files API: upload a file for runs to use, list a run's files, and stream a file's bytes as an attachment."""

from typing import Annotated, Any

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload, TemporaryFileUploadHandler
from django.http import FileResponse, HttpRequest
from ninja import Router, Status
from ninja.errors import HttpError

from agent_platform.api import ERROR_RESPONSES, ApiRequest, ErrorOut, PathId
from agent_platform.errors import InvalidRequest, UnsupportedMediaType
from agent_platform.lookup import find

from .api import RunPathId
from .files import FileListOut, FileOut, StoredFile, attachment, run_files_out, store_file, upload_too_large
from .models import Run

router = Router()
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
FilePathId = Annotated[str, PathId("file", "file")]

FILE_EXAMPLE = {
    "id": "file_3k9d0c2m7q8x1v5b6n4h2j0p",
    "name": "invoice-2026-11.pdf",
    "size": 18422,
    "content_type": "application/pdf",
    "sha256": "9f2c5e0b8a7d4c3e1f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e",
    "source": "download",
    "created_at": "2026-12-02T19:40:12.123456Z",
}


class LimitedUpload(FileUploadHandler):
    """Counts a file part's bytes and stops storing them past FILE_UPLOAD_MAX_BYTES: a body that declared no length
    (chunked) is refused here. (agent_platform.asgi refuses one that declares too much before it is read; one that
    declares none has been received by the server by now, and is only not kept.)"""

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.received = 0
        self.exceeded = False

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > settings.FILE_UPLOAD_MAX_BYTES:
            self.exceeded = True
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


UPLOAD_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary", "description": "The file."}},
                },
            }
        },
    },
    "responses": {
        201: {"description": "The stored file.", "content": {"application/json": {"example": FILE_EXAMPLE}}},
    },
}


@router.post(
    "/files",
    response={201: FileOut, 415: ErrorOut, **ERROR_RESPONSES},
    tags=["files"],
    summary="Upload a file for runs to use",
    description="Multipart, one part named `file`, at most FILE_UPLOAD_MAX_BYTES (25 MB unless changed; 413 beyond). "
    "Its name is sanitized and its type follows the name. Give its id to POST /runs as file_ids and the run's agent "
    "can set it on a file input.\n\n"
    "    curl -H 'Authorization: Bearer $KEY' -F file=@invoice.pdf https://pilothouse.example/api/v1/files",
    openapi_extra=UPLOAD_OPENAPI,
)
def upload_file(request: ApiRequest) -> Status[dict[str, Any]]:
    content_type = request.META.get("CONTENT_TYPE", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise UnsupportedMediaType(
            f"Send the file as multipart/form-data (a part named 'file'), not {content_type[:80] or 'without a type'}."
        )
    limited = LimitedUpload(request)
    request.upload_handlers = [limited, TemporaryFileUploadHandler(request)]
    try:
        uploaded = request.FILES.get("file")
    except HttpError:
        raise InvalidRequest("The multipart body could not be read.") from None
    if limited.exceeded:
        raise upload_too_large()
    if uploaded is None:
        raise InvalidRequest.of_field("file", "a multipart part named 'file' is required")
    try:
        row = store_file(request.workspace, uploaded, name=uploaded.name, source=StoredFile.Source.UPLOAD)
    finally:
        uploaded.close()
    return Status(201, row.as_dict())


@router.get(
    "/runs/{run_id}/files",
    response={200: FileListOut, **ERROR_RESPONSES},
    tags=["files"],
    summary="A run's files",
    description="The files the run was given (source upload), then those its browser downloaded (source download), "
    "oldest first.\n\n    curl -H 'Authorization: Bearer $KEY' https://pilothouse.example/api/v1/runs/run_…/files",
    openapi_extra={
        "responses": {
            200: {
                "description": "OK",
                "content": {"application/json": {"example": {"files": [FILE_EXAMPLE]}}},
            }
        }
    },
)
def list_run_files(request: ApiRequest, run_id: RunPathId) -> dict[str, Any]:
    return run_files_out(find(Run.objects.for_workspace(request.workspace), run_id, "run"))


@router.get(
    "/files/{file_id}/content",
    response={200: None, **ERROR_RESPONSES},
    tags=["files"],
    summary="A file's bytes",
    description="Streams the file with Content-Disposition: attachment, its sanitized name, its type and "
    "X-Content-Type-Options: nosniff. Another workspace's file is 404.\n\n"
    "    curl -OJ -H 'Authorization: Bearer $KEY' https://pilothouse.example/api/v1/files/file_…/content",
    openapi_extra={
        "responses": {
            200: {
                "description": "The file's bytes.",
                "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
            }
        }
    },
)
def file_content(request: ApiRequest, file_id: FilePathId) -> FileResponse:
    return attachment(find(StoredFile.objects.for_workspace(request.workspace), file_id, "file"))
