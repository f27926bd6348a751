"""Public identifiers: a type prefix and random characters, so ids say what they name and cannot be enumerated."""

import secrets

ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


LENGTH = 24


def new_public_id(prefix: str) -> str:
    return f"{prefix}_" + "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def public_id_pattern(prefix: str) -> str:
    """The regular expression every id `new_public_id(prefix)` makes matches, for the API document."""
    return f"^{prefix}_[0-9a-z]{{{LENGTH}}}$"


def session_id() -> str:
    return new_public_id("sess")


def run_id() -> str:
    return new_public_id("run")


def event_id() -> str:
    return new_public_id("evt")


def outcome_id() -> str:
    return new_public_id("outc")


def proxy_id() -> str:
    return new_public_id("proxy")


def input_id() -> str:
    return new_public_id("inp")
