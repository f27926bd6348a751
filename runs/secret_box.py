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


def seal(secrets: dict[str, str]) -> dict[str, str]:
    """What `Run.secrets` stores: `{"sealed": token}`, or {} for a run without secrets."""
    if not secrets:
        return {}
    return {SEALED: keys().encrypt(json.dumps(secrets).encode()).decode()}


def unseal(stored: dict[str, Any] | None) -> dict[str, str]:
    """The secrets a stored value holds. Only the worker calls this, for the run it executes."""
    if not stored:
        return {}
    if set(stored) != {SEALED}:
        return dict(stored)  # launched before secrets were sealed
    try:
        secrets: dict[str, str] = json.loads(keys().decrypt(stored[SEALED].encode()))
        return secrets
    except InvalidToken:
        raise SecretsUnavailable(
            "The run's secrets cannot be decrypted with this worker's SECRETS_KEY: the key that sealed them is not "
            "among its keys (keep an old key after the new one while rotating; give every process the same keys)."
        ) from None


def seal_value(value: Any) -> str:
    """A JSON value (a browser's storage state, say) sealed under the first SECRETS_KEY: an opaque Fernet token."""
    return keys().encrypt(json.dumps(value, separators=(",", ":")).encode()).decode()


def unseal_value(token: str) -> Any:
    """The JSON value a `seal_value` token holds; SecretsUnavailable when no configured key opens it."""
    try:
        return json.loads(keys().decrypt(token.encode()))
    except InvalidToken:
        raise SecretsUnavailable(
            "A sealed browser state cannot be decrypted with this process's SECRETS_KEY: the key that sealed it is "
            "not among its keys (keep an old key after the new one while rotating)."
        ) from None


def seal_state(state: dict[str, Any] | None) -> dict[str, str] | None:
    """What a JSON column holding a browser state stores: `{"sealed": token}` (cookies are credentials), or None."""
    if not state:
        return None
    return {SEALED: seal_value(state)}


def unseal_state(stored: dict[str, Any] | None) -> dict[str, Any] | None:
    """The browser state a `seal_state` value holds; a state stored before sealing is returned as it is."""
    if not stored:
        return None
    if set(stored) != {SEALED}:
        return dict(stored)
    state: dict[str, Any] = unseal_value(stored[SEALED])
    return state
