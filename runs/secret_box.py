"""Run secrets at rest: sealed with authenticated encryption (Fernet: AES-128-CBC + HMAC-SHA256) under SECRETS_KEY
when a run is launched, opened only by the worker that executes it, and cleared when the run ends.

SECRETS_KEY is a comma-separated list of Fernet keys: the first seals, every one opens. To rotate, put a new key
first and keep the old one after it until no run sealed under it is still queued or running, then drop it.
"""

import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

SEALED = "sealed"


class SecretsUnavailable(Exception):
    """The stored secrets cannot be opened with any configured key (a key was dropped or differs between machines)."""


def keys() -> MultiFernet:
    return MultiFernet([Fernet(key.encode()) for key in settings.SECRETS_KEYS])


def generate_key() -> str:
    return Fernet.generate_key().decode()


def seal_value(value: Any) -> str:
    """A JSON value sealed under the first SECRETS_KEY: an opaque Fernet token."""
    return keys().encrypt(json.dumps(value, separators=(",", ":")).encode()).decode()


def unseal_value(token: str) -> Any:
    """The JSON value a `seal_value` token holds; SecretsUnavailable when no configured key opens it."""
    try:
        return json.loads(keys().decrypt(token.encode()))
    except InvalidToken:
        raise SecretsUnavailable(
            "A value sealed at rest (a run's secrets, a browser state, a proxy's URL) cannot be decrypted with this "
            "process's SECRETS_KEY: the key that sealed it is not among its keys (keep an old key after the new one "
            "while rotating; give every process the same keys)."
        ) from None


def seal(value: dict[str, Any]) -> dict[str, str]:
    """What a JSON column holding something secret stores (a run's secrets, a session's browser state, a proxy's URL):
    `{"sealed": token}`, or {} for nothing."""
    if not value:
        return {}
    return {SEALED: seal_value(value)}


def unseal(stored: dict[str, Any] | None) -> dict[str, Any]:
    """What a sealed column holds; {} for nothing. A value stored before it was sealed is returned as it is. A worker
    calls this for the run it executes, and the web to mask a person's message to a run (runs.human)."""
    if not stored:
        return {}
    if set(stored) != {SEALED}:
        return dict(stored)
    opened: dict[str, Any] = unseal_value(stored[SEALED])
    return opened
