"""Where a browser session's files are kept (default storage): its screenshots, its recording and its downloads; the
worker writes them, the session's pages serve them after checking the viewer's workspace."""

from __future__ import annotations

import re
import uuid

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from .models import BrowserSession

NAME_MAX_CHARS = 120


def folder(session: BrowserSession) -> str:
    return f"browsers/{session.public_id}"


def clean_name(name: str) -> str:
    """A file name without folders or control characters, never empty."""
    cleaned = re.sub(r"[^A-Za-z0-9._ -]+", "_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip(" .")
    return cleaned[:NAME_MAX_CHARS] or "download"


def save_screenshot(session: BrowserSession, png: bytes) -> str:
    name = f"{uuid.uuid4().hex}.png"
    default_storage.save(f"{folder(session)}/screenshots/{name}", ContentFile(png))
    return name


def screenshot_path(session: BrowserSession, name: str) -> str:
    return f"{folder(session)}/screenshots/{clean_name(name)}"


def trace_path(session: BrowserSession) -> str:
    return f"{folder(session)}/trace.zip"


def save_trace(session: BrowserSession, data: bytes) -> None:
    default_storage.save(trace_path(session), ContentFile(data))
    BrowserSession.objects.filter(pk=session.pk).update(trace_name="trace.zip")


def downloads_folder(session: BrowserSession) -> str:
    return f"{folder(session)}/downloads"


def save_download(session: BrowserSession, name: str, data: bytes) -> str:
    return default_storage.save(f"{downloads_folder(session)}/{clean_name(name)}", ContentFile(data))


def list_downloads(session: BrowserSession) -> list[tuple[str, int]]:
    """(name, size) of each kept download."""
    try:
        _, names = default_storage.listdir(downloads_folder(session))
    except (FileNotFoundError, NotImplementedError):
        return []
    return [(name, default_storage.size(f"{downloads_folder(session)}/{name}")) for name in sorted(names)]


def download_path(session: BrowserSession, name: str) -> str:
    return f"{downloads_folder(session)}/{clean_name(name)}"
