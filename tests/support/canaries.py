"""Recognisable values that must never leave the places they belong to, and the text a test searches for them."""

import json
from typing import Any

CANARY_ANTHROPIC_KEY = "sk-ant-api03-CANARY-anthropic-key-0123456789"
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
