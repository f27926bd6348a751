"""A stored file (a screenshot, a trace, a run's download) answered to a viewer whose workspace the view has checked:
streamed from Django's default storage through the web process, never a redirect to the storage itself.

Why streamed, not a presigned redirect to the bucket:
- the bucket stays private and unreachable from people's browsers: only the web and worker machines need a route
  to the S3 endpoint (an S3 server on an internal network works as it is, with no public name or CORS);
- every byte is behind the same sign-in and workspace check on every request: a presigned URL is a bearer token
  for its lifetime (it leaks through history, logs, a pasted link), and the page never sees one;
- the answer is the same for the filesystem and the bucket: its Content-Type, Content-Disposition (the trace's
  `run_…-trace.zip` attachment, which `playwright show-trace` and trace.playwright.dev open) and Cache-Control are
  ours, not the bucket's metadata.
The cost is the file's bytes through a web process: screenshots of tens of kilobytes, traces of a few megabytes,
read in chunks (django-storages keeps up to 2 MiB in memory and spills a larger file to a temporary file).
"""

from django.core.files.storage import default_storage
from django.http import FileResponse, Http404


def serve_stored_file(
    path: str,
    *,
    content_type: str,
    missing: str,
    download_name: str | None = None,
    cache_control: str = "private, no-store",
) -> FileResponse:
    """The file at `path` in default storage as a response: inline, or an attachment named `download_name`.

    The caller has already answered 404 for a viewer outside the object's workspace; `missing` is the 404's text
    when the file itself is not there (a run that kept no trace). One storage request finds and opens the file."""
    try:
        handle = default_storage.open(path, "rb")
    except FileNotFoundError:
        raise Http404(missing) from None
    response = FileResponse(
        handle,
        content_type=content_type,
        as_attachment=download_name is not None,
        filename=download_name or "",
    )
    response["Cache-Control"] = cache_control
    return response
