"""The names operators give what they keep (a profile, a proxy, a schedule): one rule for all of them."""

import re

from .errors import InvalidRequest
from .lib.text import stripped_text_pattern

CONTROL = r"\x00-\x1f\x7f"
CONTROL_CHARACTERS = re.compile(f"[{CONTROL}]")


def name_pattern(max_chars: int) -> str:
    """The regular expression of exactly the names clean_name takes (white space at the ends aside, 1 to `max_chars`
    characters, no control character), for an API document: in Python, pydantic and ECMA-262 alike."""
    return stripped_text_pattern(max_chars, CONTROL)


def clean_name(name: object, max_chars: int, field: str = "name") -> str:
    """The name trimmed; InvalidRequest naming `field` when it is missing, too long, or holds a control character."""
    if not isinstance(name, str):
        raise InvalidRequest.of_field(field, "must be a string")
    name = name.strip()
    if not name:
        raise InvalidRequest.of_field(field, "is required and must not be empty")
    if len(name) > max_chars:
        raise InvalidRequest.of_field(field, f"is {len(name)} characters; the limit is {max_chars}")
    if CONTROL_CHARACTERS.search(name):
        raise InvalidRequest.of_field(field, "must not contain control characters")
    return name
