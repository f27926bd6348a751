"""SQLite, `make run`'s default database: every way of choosing it gets WAL and a busy timeout, and the tests' own
database is a file, so the worker subprocesses share it (`make test` runs the whole suite on SQLite as well)."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO


def default_database(tmp_path: Path, database_url: str | None) -> dict:
    """settings.DATABASES["default"] as a fresh process computes it from this environment."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env["PILOTHOUSE_VAR_DIR"] = str(tmp_path)
    if database_url is not None:
        env["DATABASE_URL"] = database_url
    code = "import json; from agent_platform import settings; print(json.dumps(settings.DATABASES['default'], default=str))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_a_sqlite_database_url_gets_the_connection_setup_of_the_default(tmp_path):
    default = default_database(tmp_path, None)
    from_url = default_database(tmp_path, f"sqlite:///{tmp_path}/named.sqlite3")

    assert default["NAME"] == str(tmp_path / "pilothouse.sqlite3")
    assert "journal_mode=WAL" in default["OPTIONS"]["init_command"]
    assert default["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert from_url["OPTIONS"] == default["OPTIONS"]
    assert default["TEST"] == {"NAME": str(tmp_path / "test_pilothouse.sqlite3")}
    assert from_url["TEST"] == {"NAME": str(tmp_path / "test_named.sqlite3")}


def test_postgresql_keeps_its_own_options(tmp_path):
    database = default_database(tmp_path, "postgres://postgres@127.0.0.1:5432/anything")

    assert database["ENGINE"] == "django.db.backends.postgresql"
    assert "TEST" not in database
    # None of SQLite's connection setup: a PostgreSQL process only gets its bounded pool (DB_POOL_MAX).
    assert set(database.get("OPTIONS", {})) <= {"pool"}


def test_a_sqlite_connection_is_in_wal_mode_with_a_busy_timeout(tmp_path):
    """What a fresh process opens on a sqlite:/// URL (whichever database this suite runs on)."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env["PILOTHOUSE_VAR_DIR"] = str(tmp_path)
    env["DATABASE_URL"] = f"sqlite:///{tmp_path}/opened.sqlite3"
    code = (
        "import django, json; django.setup(); from django.db import connection; c = connection.cursor(); "
        "print(json.dumps([c.execute('PRAGMA journal_mode').fetchone()[0], "
        "c.execute('PRAGMA busy_timeout').fetchone()[0], connection.is_in_memory_db()]))"
    )
    env["DJANGO_SETTINGS_MODULE"] = "agent_platform.settings"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)

    assert json.loads(result.stdout) == ["wal", 30000, False]
    assert (tmp_path / "opened.sqlite3").is_file()
