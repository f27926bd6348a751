"""Recognisable values that must never leave the places they belong to, and the text a test searches for them."""

import json
import sqlite3
import subprocess
from contextlib import closing
from typing import Any

from django.db import connection

CANARY_ANTHROPIC_KEY = "sk-ant-api03-CANARY-anthropic-key-0123456789"
HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>"


def dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def database_dump() -> str:
    """A dump of the test database, as an operator (or an attacker with a backup) would read it: pg_dump, or on
    SQLite the SQL of every row, read through a connection of its own (so the WAL's pages are in it too)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        with closing(sqlite3.connect(db["NAME"])) as dump_connection:
            return "\n".join(dump_connection.iterdump())
    return subprocess.run(
        ["pg_dump", "--data-only", "-h", db["HOST"] or "127.0.0.1", "-p", str(db["PORT"] or 5432),
         "-U", db["USER"] or "postgres", db["NAME"]],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
