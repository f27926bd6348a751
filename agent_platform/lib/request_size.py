"""How big a Messages request is before it is sent: about four characters of JSON a token, each image by its pixels,
and the bytes the body carries. The worker's context guard keeps requests within the model's limits with it, and a
run's cost cap estimates a request's price with it (the agent's, the judge's and the grader's alike)."""

from __future__ import annotations

import base64
import binascii
import json
import struct
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4
PIXELS_PER_TOKEN = 750
# An image whose size cannot be read is priced as a typical 1280x800 screenshot.
UNKNOWN_IMAGE_TOKENS = 1_365


@dataclass(frozen=True)
class Size:
    tokens: int = 0
    images: int = 0
    bytes: int = 0

    def __add__(self, other: Size) -> Size:
        return Size(self.tokens + other.tokens, self.images + other.images, self.bytes + other.bytes)

    def __sub__(self, other: Size) -> Size:
        return Size(self.tokens - other.tokens, self.images - other.images, self.bytes - other.bytes)

    def within(self, limit: Size) -> bool:
        return self.tokens <= limit.tokens and self.images <= limit.images and self.bytes <= limit.bytes


def image_tokens(block: dict[str, Any]) -> int:
    """An image's tokens by its pixel size (width x height / 750), read from the PNG or JPEG header."""
    source = block.get("source") or {}
    data = source.get("data") if isinstance(source, dict) else None
    if not isinstance(data, str):
        return UNKNOWN_IMAGE_TOKENS
    try:
        head = base64.b64decode(data[:48] + "=" * (-len(data[:48]) % 4))
    except (binascii.Error, ValueError):
        return UNKNOWN_IMAGE_TOKENS
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24:
        width: int
        height: int
        width, height = struct.unpack(">II", head[16:24])
        return max(width * height // PIXELS_PER_TOKEN, 1)
    return UNKNOWN_IMAGE_TOKENS


def _skeleton(value: Any, images: list[dict[str, Any]]) -> Any:
    """`value` with each image's data left out (collected in `images`), so sizing never serializes megabytes."""
    if isinstance(value, dict):
        if value.get("type") == "image":
            images.append(value)
            return {"type": "image"}
        return {key: _skeleton(item, images) for key, item in value.items()}
    if isinstance(value, list):
        return [_skeleton(item, images) for item in value]
    return value


def size_of(value: Any) -> Size:
    """About four characters of JSON a token plus each image by its pixels; bytes as the request body carries them."""
    images: list[dict[str, Any]] = []
    text = json.dumps(_skeleton(value, images), separators=(",", ":"), ensure_ascii=False)
    image_bytes = sum(len(str((image.get("source") or {}).get("data", ""))) for image in images)
    return Size(
        tokens=len(text) // CHARS_PER_TOKEN + sum(image_tokens(image) for image in images),
        images=len(images),
        bytes=len(text.encode()) + image_bytes,
    )
