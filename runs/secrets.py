"""Per-run secrets: the agent sees `{{secret:NAME}}` placeholders, the browser types the values, events see masks."""

import re
from typing import Any
from urllib.parse import urlsplit

SECRETS_MAX = 20
SECRET_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
SECRET_VALUE_MIN_CHARS = 4  # a shorter value would mask ordinary text everywhere it occurs
SECRET_VALUE_MAX_CHARS = 1000
PLACEHOLDER = re.compile(r"\{\{secret:([A-Za-z0-9_]+)\}\}")


class UnknownSecret(ValueError):
    """A placeholder names a secret the run does not have."""


class SecretRefusedHere(ValueError):
    """A placeholder names a secret that may not be typed on the page's host (its allowed domains do not cover it)."""


def placeholder(name: str) -> str:
    return "{{secret:" + name + "}}"


def secret_value_problem(value: str) -> str | None:
    """What is wrong with a secret's value, or None: too short a value would be masked wherever ordinary text holds
    it, and a NUL cannot be typed."""
    if not SECRET_VALUE_MIN_CHARS <= len(value) <= SECRET_VALUE_MAX_CHARS:
        return f"must be {SECRET_VALUE_MIN_CHARS} to {SECRET_VALUE_MAX_CHARS} characters"
    if "\x00" in value:
        return "must not contain NUL"
    return None


def secrets_problem(secrets: Any) -> tuple[str, str] | None:
    """(field, message) of the first thing wrong with a launch's secrets, or None when they are acceptable."""
    if not isinstance(secrets, dict):
        return "secrets", "must be an object of NAME: value"
    if len(secrets) > SECRETS_MAX:
        return "secrets", f"has {len(secrets)} entries; at most {SECRETS_MAX} are allowed"
    for name, value in secrets.items():
        if not isinstance(name, str) or not SECRET_NAME.match(name):
            return "secrets", "names must be upper-case letters, digits and _ (e.g. SHOP_PASSWORD), 64 at most"
        if not isinstance(value, str):
            return f"secrets.{name}", "must be a string"
        problem = secret_value_problem(value)
        if problem is not None:
            return f"secrets.{name}", problem
    return None


def host_covered(host: str, domains: list[str]) -> bool:
    """Whether `host` is one of `domains` or a subdomain of one."""
    host = host.lower().rstrip(".")
    return bool(host) and any(host == domain or host.endswith("." + domain) for domain in domains)


def substitute(
    text: str, secrets: dict[str, str], *, url: str = "", domains: dict[str, list[str]] | None = None
) -> str:
    """The text with each placeholder replaced by its value, for typing into the page at `url`; never shown to
    anyone. A secret with allowed domains (`domains[NAME]`) is typed only on a page of one of them."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in secrets:
            known = ", ".join(placeholder(known) for known in sorted(secrets)) or "none"
            raise UnknownSecret(f"This run has no secret named {name}; its secrets are: {known}.")
        allowed = (domains or {}).get(name)
        if allowed is not None:
            host = urlsplit(url).hostname or ""
            if not host_covered(host, allowed):
                raise SecretRefusedHere(
                    f"The secret {placeholder(name)} may be typed only on {', '.join(allowed)} (and their "
                    f"subdomains); this page is on {host or 'no host'}, so nothing was typed."
                )
        return secrets[name]

    return PLACEHOLDER.sub(value, text)


def is_binary(item: dict[str, Any]) -> bool:
    """A block or source that carries encoded bytes (a base64 image, say): a secret's digits may occur in it by
    chance, and rewriting them would corrupt it."""
    return item.get("type") in ("image", "base64")


def mask(value: Any, secrets: dict[str, str] | None) -> Any:
    """A copy of a JSON-like value with every secret's value replaced by its placeholder (longest values first).

    Only text is masked: string values (text blocks, URLs, titles, event payload strings), never dict keys and never
    base64 data.
    """
    if not secrets:
        return value
    pairs = sorted(
        ((secret, placeholder(name)) for name, secret in secrets.items() if secret), key=lambda p: -len(p[0])
    )

    def masked(item: Any) -> Any:
        if isinstance(item, str):
            for secret, shown in pairs:
                if secret in item:
                    item = item.replace(secret, shown)
            return item
        if isinstance(item, dict):
            if is_binary(item):
                return item
            return {key: masked(inner) for key, inner in item.items()}
        if isinstance(item, list | tuple):
            return [masked(inner) for inner in item]
        return item

    return masked(value)


def prompt_section(secrets: dict[str, str] | None) -> str:
    """What the system prompt says about the run's secrets: their names, never their values."""
    if not secrets:
        return ""
    names = "\n".join(f"- {placeholder(name)}" for name in sorted(secrets))
    return (
        "\nSecrets: the operator gave this run secrets you cannot see. To enter one, type or form_input its "
        "placeholder exactly; the browser substitutes the value, and wherever the value appears later you see the "
        f"placeholder again:\n{names}\n"
    )
