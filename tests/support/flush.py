"""How a transactional test empties the PostgreSQL test database after itself.

Django's flush on PostgreSQL is one `TRUNCATE` of every table (about 60 here). A TRUNCATE gives each table a new file
and drops the old one at commit, so its cost is the table count, not the rows: measured on the CI machine's twin under
the suites' own load, 2.0 to 2.5 s a test against 0.16 s for a `DELETE FROM` of each table in one transaction; over
the hundreds of transactional tests that was most of what the PostgreSQL suite took beyond the SQLite one. A test's
tables hold a few rows, so deleting them is the cheap way. Every foreign key Django creates on PostgreSQL is
`DEFERRABLE INITIALLY DEFERRED` (checked below), so the order of the deletes does not matter: the keys are checked
at the commit, when every table is empty.

A flush that must restart the sequences, or that empties only some tables, is left to Django's own TRUNCATE."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import OperationalError, connection
from django.db.backends.postgresql.operations import DatabaseOperations

FLUSH_ATTEMPTS = 5


def deletes_suffice() -> bool:
    """Whether this database can be flushed by deletes: PostgreSQL, every foreign key checked at commit."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace"
            " WHERE c.contype = 'f' AND NOT c.condeferred AND n.nspname = current_schema()"
        )
        return cursor.fetchone()[0] == 0


@contextmanager
def flushing_by_delete() -> Iterator[None]:
    """While open, a full flush of the PostgreSQL test database deletes each table's rows instead of truncating
    (only where `deletes_suffice()`)."""
    truncate = DatabaseOperations.sql_flush
    execute = DatabaseOperations.execute_sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or set(tables) != set(self.connection.introspection.django_table_names(only_existing=True)):
            return truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
        # Every table locked first, as a TRUNCATE locks them: a worker's run still writing waits for the flush, rather
        # than taking row locks in another order between its deletes.
        names = ", ".join(style.SQL_FIELD(self.quote_name(table)) for table in tables)
        return [
            f"{style.SQL_KEYWORD('LOCK TABLE')} {names} {style.SQL_KEYWORD('IN ACCESS EXCLUSIVE MODE')};",
            *(f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables),
        ]

    def execute_sql_flush(self, sql_list):
        # A run a test left going may still be writing; the two can still deadlock over the locks, and PostgreSQL then
        # aborts one of them. If it is the flush, it runs again: the worker's transaction has ended by then.
        for attempt in range(FLUSH_ATTEMPTS):
            try:
                return execute(self, sql_list)
            except OperationalError as error:
                if "deadlock detected" not in str(error) or attempt == FLUSH_ATTEMPTS - 1:
                    raise
        return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DatabaseOperations, "sql_flush", sql_flush)
        patch.setattr(DatabaseOperations, "execute_sql_flush", execute_sql_flush)
        yield
