"""The files tests' site (pages that download in each way a site does, and a form that receives an upload and says
its sha256) and their worker, whose download limits are low and whose browser may reach only that site's port."""

import hashlib
import http.server
import threading
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.workers import WorkerProcess, shared_worker, worker_environment

# The bytes each download serves: fixed, so a test knows the sha256 to expect.
REPORT_CSV = b"month,total\n2026-10,120.00\n2026-11,98.50\n"
INVOICE_PDF = b"%PDF-1.4\n% a test invoice\n" + bytes(range(256)) * 8 + b"\n%%EOF\n"
BLOB_TEXT = "notes from a blob: caf\u00e9\n"
BLOB_BYTES = BLOB_TEXT.encode()
# The files worker keeps downloads of at most this many bytes, and at most FILES_MAX_FILES of them.
FILES_MAX_BYTES = 64 * 1024
FILES_MAX_FILES = 3
BIG_BYTES = FILES_MAX_BYTES * 4

# Where each control sits on the downloads page: fixed, so the scripted agent clicks coordinates.
SPOTS = {"report": (110, 30), "invoice": (110, 90), "blob": (110, 150), "big": (110, 210), "refused": (110, 270)}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def spot(top: int) -> str:
    return f'style="position:fixed;left:10px;top:{top - 20}px;width:200px;height:40px;display:block"'


def downloads_page(refused_origin: str) -> str:
    blob = BLOB_TEXT.replace("\n", "\\n")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Downloads</title></head><body>
<a id="report" href="/report.csv" download="report.csv" {spot(SPOTS["report"][1])}>Download report</a>
<a id="invoice" href="/invoice" {spot(SPOTS["invoice"][1])}>Download invoice</a>
<button id="blob" {spot(SPOTS["blob"][1])} onclick="
  const url = window.URL.createObjectURL(new Blob(['{blob}'], {{type: 'text/plain'}}));
  const a = document.createElement('a'); a.href = url; a.download = 'notes.txt'; document.body.append(a); a.click();
">Save notes</button>
<a id="big" href="/big.bin" download {spot(SPOTS["big"][1])}>Download big</a>
<a id="refused" href="{refused_origin}/secret.csv" download {spot(SPOTS["refused"][1])}>Download elsewhere</a>
</body></html>"""


UPLOAD_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Upload</title></head><body>
<form method="post" action="/upload" enctype="multipart/form-data">
  <input type="file" name="document" aria-label="Document">
  <button type="submit">Send</button>
</form></body></html>"""


class FileSite(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), FileHandler)
        self.refused_origin = ""
        self.received: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class FileHandler(http.server.BaseHTTPRequestHandler):
    server: FileSite

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send(self, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/downloads.html":
            self.send(downloads_page(self.server.refused_origin).encode(), "text/html; charset=utf-8")
        elif path == "/upload.html":
            self.send(UPLOAD_PAGE.encode(), "text/html; charset=utf-8")
        elif path == "/report.csv":
            self.send(REPORT_CSV, "text/csv")
        elif path == "/invoice":
            # a non-ASCII name (RFC 6266 filename*), kept as it is and served back with filename*
            self.send(
                INVOICE_PDF,
                "application/pdf",
                {"content-disposition": "attachment; filename=\"invoice.pdf\"; filename*=UTF-8''invoice-n%C2%BA7.pdf"},
            )
        elif path == "/big.bin":
            self.send(b"x" * BIG_BYTES, "application/octet-stream")
        elif path == "/secret.csv":
            self.send(b"secret\n", "text/csv", {"content-disposition": "attachment"})
        else:
            self.send_error(404)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        head = f"Content-Type: {self.headers.get('content-type', '')}\r\n\r\n".encode()
        message = BytesParser(policy=HTTP).parsebytes(head + body)
        parts = [part for part in message.iter_parts() if part.get_filename() is not None]
        received = [
            {"name": part.get_filename(), "sha256": sha256(part.get_payload(decode=True) or b"")} for part in parts
        ]
        with self.server.lock:
            self.server.received.extend(received)
        lines = "".join(f"<li>{item['name']}: {item['sha256']}</li>" for item in received)
        self.send(f"<!doctype html><title>Received</title><ul>{lines}</ul>".encode(), "text/html; charset=utf-8")


_sites: dict[str, FileSite] = {}


def start_site() -> FileSite:
    site = FileSite()
    threading.Thread(target=site.serve_forever, daemon=True).start()
    return site


@pytest.fixture(scope="session")
def file_site() -> FileSite:
    """The session's file site, and a second one on another port that the files worker may not reach."""
    if "site" not in _sites:
        _sites["site"] = start_site()
        _sites["refused"] = start_site()
        _sites["site"].refused_origin = _sites["refused"].url
    return _sites["site"]


FILES_QUEUE = "files-tests"


@pytest.fixture(scope="session")
def files_worker(
    request, file_site, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory
) -> WorkerProcess:
    """A worker with low download limits whose browser may reach the file site's port of 127.0.0.1 and nothing else
    private (the refused site's port is another)."""
    media = tmp_path_factory.mktemp("files-media")
    run_files = tmp_path_factory.mktemp("files-run-files")

    def environment() -> dict:
        return worker_environment(
            {
                "MEDIA_ROOT": str(media),
                "RUN_FILES_DIR": str(run_files),
                "RUN_DOWNLOAD_MAX_BYTES": str(FILES_MAX_BYTES),
                "RUN_DOWNLOAD_MAX_FILES": str(FILES_MAX_FILES),
                "BROWSER_ALLOWED_PRIVATE_HOSTS": f"127.0.0.1:{file_site.server_address[1]}",
                "MODEL_MAX_RETRIES": "2",
            }
        )

    worker = shared_worker(request, tmp_path_factory, django_db_blocker, "files", FILES_QUEUE, environment)
    if not hasattr(worker, "media_root"):  # the worker started here (another module may have started it first)
        worker.media_root = media
        worker.run_files = run_files
    return worker
