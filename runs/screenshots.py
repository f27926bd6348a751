"""Screenshots are files in Django storage, referenced from events by a URL that checks the viewer's workspace."""

import re
import uuid

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

NAME_PATTERN = re.compile(r"^[0-9a-f]{32}\.(png|jpg)$")
CONTENT_TYPES = {"png": "image/png", "jpg": "image/jpeg"}


def storage_path(run_public_id: str, name: str) -> str | None:
    if not NAME_PATTERN.match(name):
        return None
    return f"screenshots/{run_public_id}/{name}"


def content_type(name: str) -> str:
    return CONTENT_TYPES[name.rsplit(".", 1)[-1]]


def save_screenshot(run_public_id: str, image: bytes, extension: str = "png") -> str:
    """Store an image (a PNG, or a JPEG with extension "jpg") and return the URL the UI and the API use for it."""
    name = f"{uuid.uuid4().hex}.{extension}"
    default_storage.save(storage_path(run_public_id, name), ContentFile(image))
    return reverse("runs:screenshot", args=[run_public_id, name])


def read_screenshot(url: str) -> bytes | None:
    """The PNG behind a URL save_screenshot returned (the judge reads the final viewport this way)."""
    run_public_id, _, name = url.rstrip("/").split("/")[-3:]
    path = storage_path(run_public_id, name)
    if path is None:
        return None
    try:
        with default_storage.open(path, "rb") as handle:
            content: bytes = handle.read()
    except FileNotFoundError:
        return None
    return content
