"""Where a run's files live: STORAGE_URL read into Django's STORAGES (the local filesystem under MEDIA_ROOT by default,
or an S3-compatible bucket through django-storages, agent_platform.bucket_storage), and where the S3 client finds its
credentials.

settings.py calls `storages_setting` before Django is set up, so this module imports nothing of Django.

What is read from the environment, and by whom:

- `STORAGE_URL` (here): empty for the filesystem, or `s3://bucket` / `s3://bucket/prefix`.
- The endpoint (here, first set wins): `AWS_S3_ENDPOINT_URL`, `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`; none means
  AWS itself. botocore would read the last two by itself; reading them here lets the system check judge them.
- The region (here, first set wins): `AWS_REGION`, `AWS_DEFAULT_REGION`. botocore reads only `AWS_DEFAULT_REGION`
  by itself (and the region of the profile's config file, which still applies when neither is set).
- The credentials are never read here, nor kept in a setting: django-storages reads `AWS_S3_ACCESS_KEY_ID` or
  `AWS_ACCESS_KEY_ID`, `AWS_S3_SECRET_ACCESS_KEY` or `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` and
  `AWS_S3_SESSION_PROFILE` from the environment; without them boto3's own chain applies (`AWS_PROFILE` and the
  shared credentials and config files, web identity, the container's and the instance's role).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

S3_BACKEND = "agent_platform.bucket_storage.BucketStorage"
FILESYSTEM_BACKEND = "django.core.files.storage.FileSystemStorage"
STATIC_BACKEND = "django.contrib.staticfiles.storage.StaticFilesStorage"

# S3's bucket naming rules (general purpose buckets): 3-63 characters, lowercase letters, digits, dots and hyphens,
# starting and ending with a letter or a digit.
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
ENDPOINT_VARIABLES = ("AWS_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
REGION_VARIABLES = ("AWS_REGION", "AWS_DEFAULT_REGION")
KEY_PAIRS = (("AWS_S3_ACCESS_KEY_ID", "AWS_S3_SECRET_ACCESS_KEY"), ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"))
# A file is read into memory up to this size, and spilled to a temporary file beyond it (a long run's trace).
READ_MEMORY_BYTES = 2 * 1024 * 1024
# Explicit timeouts and retries, as for every other network client here: a bucket that does not answer costs a
# screenshot or a page a few seconds, never a worker thread for botocore's default minute per attempt.
CLIENT_TIMEOUTS: dict[str, Any] = {
    "connect_timeout": 5,
    "read_timeout": 30,
    "retries": {"max_attempts": 3, "mode": "standard"},
}
# The providers of boto's credential chain that ask the network (the container's and the instance's metadata
# endpoints): the start-up check never calls them; it takes their variables as the operator's word.
NETWORK_PROVIDERS = ("container-role", "iam-role")
CONTAINER_VARIABLES = ("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI")
STORAGE_URL_FORM = "STORAGE_URL must be empty (files under MEDIA_ROOT) or s3://bucket or s3://bucket/prefix"


@dataclass(frozen=True)
class Bucket:
    """An S3-compatible bucket and the key prefix every file is stored under ('' for the bucket's root)."""

    name: str
    prefix: str


def parse_storage_url(url: str) -> Bucket | None:
    """None for the local filesystem (an empty STORAGE_URL), the bucket of an s3:// URL; ValueError for anything else.

    A URL that carries credentials is refused without being repeated: keys belong in AWS_* variables, not in a value
    that is printed, logged and shown in error pages."""
    url = url.strip()
    if not url:
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(f"{STORAGE_URL_FORM}; it does not parse as a URL.") from None
    if parts.username is not None or parts.password is not None:
        raise ValueError(
            f"{STORAGE_URL_FORM}; it carries credentials (not repeated here). "
            "Put the keys in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY instead."
        )
    if parts.scheme != "s3":
        raise ValueError(f"{STORAGE_URL_FORM}, not {url!r}.")
    if port is not None:
        raise ValueError(f"{STORAGE_URL_FORM}, not {url!r}: the server's address goes in AWS_ENDPOINT_URL.")
    if parts.query or parts.fragment:
        raise ValueError(f"{STORAGE_URL_FORM}, not {url!r}: it takes no query or fragment.")
    bucket = parts.hostname or ""
    if not bucket:
        raise ValueError(f"{STORAGE_URL_FORM}, not {url!r}: it names no bucket.")
    if not BUCKET_NAME.match(parts.netloc):
        raise ValueError(
            f"STORAGE_URL names the bucket {parts.netloc!r}, which S3 does not allow: 3-63 lowercase letters, "
            "digits, dots and hyphens, starting and ending with a letter or a digit."
        )
    segments = [segment for segment in parts.path.split("/") if segment]
    if any(segment in (".", "..") for segment in segments):
        raise ValueError(f"{STORAGE_URL_FORM}, not {url!r}: its prefix may not contain '.' or '..'.")
    return Bucket(name=bucket, prefix="/".join(segments))


def first_set(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((environ[name] for name in names if environ.get(name)), None)


def storages_setting(bucket: Bucket | None, environ: Mapping[str, str] = os.environ) -> dict[str, dict[str, Any]]:
    """Django's STORAGES: the default storage in the bucket (or on the filesystem); static files stay where they are."""
    static = {"BACKEND": STATIC_BACKEND}
    if bucket is None:
        return {"default": {"BACKEND": FILESYSTEM_BACKEND}, "staticfiles": static}
    # botocore is loaded only when files go to a bucket: it costs every process about 0.2 s at start-up.
    from botocore.config import Config  # noqa: PLC0415

    options: dict[str, Any] = {
        "bucket_name": bucket.name,
        "location": bucket.prefix,
        "endpoint_url": first_set(environ, ENDPOINT_VARIABLES),
        "region_name": first_set(environ, REGION_VARIABLES),
        # Every name written is new by construction (a screenshot's uuid, a file's id; a run's trace deletes the one
        # it replaces), so no save asks whether the name is taken: that check would cost each screenshot a request.
        "file_overwrite": True,
        # Objects get no ACL of their own: they are as private as the bucket (and nothing here asks for a public URL).
        "default_acl": None,
        "max_memory_size": READ_MEMORY_BYTES,
        "client_config": Config(**CLIENT_TIMEOUTS),
    }
    return {"default": {"BACKEND": S3_BACKEND, "OPTIONS": options}, "staticfiles": static}


def credentials_source() -> str | None:
    """Where the S3 client will take its credentials from, as an operator would name it, or None when nothing
    provides any. ValueError when a key is set without its other half. Nothing is read over the network: a container
    or instance role counts when its variables say it is there (`AWS_EC2_METADATA_DISABLED=false` for an instance
    role, whose metadata service has no variable of its own)."""
    environ = os.environ
    for access, secret in KEY_PAIRS:
        if environ.get(access) and environ.get(secret):
            return f"{access} and {secret}"
        if environ.get(access) or environ.get(secret):
            given, missing = (access, secret) if environ.get(access) else (secret, access)
            raise ValueError(f"{given} is set but {missing} is not.")
    if profile := environ.get("AWS_S3_SESSION_PROFILE"):
        return f"the profile {profile!r} (AWS_S3_SESSION_PROFILE)"
    if any(environ.get(name) for name in CONTAINER_VARIABLES):
        return "the container's role (AWS_CONTAINER_CREDENTIALS_*)"
    from botocore.session import Session  # noqa: PLC0415 (asked only when files go to a bucket; see storages_setting)

    session = Session()
    resolver = session.get_component("credential_provider")
    for name in NETWORK_PROVIDERS:
        resolver.remove(name)
    credentials = resolver.load_credentials()
    if credentials is not None:
        return f"boto's credential chain ({credentials.method})"
    if environ.get("AWS_EC2_METADATA_DISABLED", "").strip().lower() == "false":
        return "the instance's role (AWS_EC2_METADATA_DISABLED=false)"
    return None
