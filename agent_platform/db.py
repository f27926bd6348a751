"""A thread's database connection given back before it waits, so a process's connections follow its writes, not its
threads (the pool: DB_POOL_MAX in settings)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import connection

P = ParamSpec("P")
T = TypeVar("T")


def pooled() -> bool:
    """Connections come from this process's pool (PostgreSQL with DB_POOL_MAX > 0)."""
    return bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))


def release() -> None:
    """Give this thread's connection back to the process's pool: called before a wait on the model, a person, the
    browser or a timer, and after a background thread's write. The next query takes one again (from the pool: no new
    server connection). Inside a transaction it keeps it (the transaction is not over); without a pool (SQLite, or
    PostgreSQL behind PgBouncer with the pool off) the thread keeps its own connection as it always did."""
    if pooled() and connection.connection is not None and not connection.in_atomic_block:
        connection.close()


def released_after(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`function(*args, **kwargs)`, then this thread's connection back to the pool (`release`), whatever happened: for
    a thread that outlives the work it does now (an executor's), where nothing else would give it back."""
    try:
        return function(*args, **kwargs)
    finally:
        release()
