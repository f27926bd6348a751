"""DB_POOL_MAX: on PostgreSQL each process draws its connections from a pool of its own of at most that many (Django's
pool, which needs connections that are not kept: CONN_MAX_AGE 0); 0 turns it off; SQLite never has one."""

import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import REPO

READ = (
    "import json; from agent_platform import settings as s; "
    "d = s.DATABASES['default']; print(json.dumps([d['ENGINE'], d.get('CONN_MAX_AGE'), d.get('OPTIONS', {})]))"
)


def database_settings(**variables: str) -> tuple[str, int | None, dict]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DB_")} | variables
    done = subprocess.run([sys.executable, "-c", READ], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    engine, max_age, options = json.loads(done.stdout)
    return engine, max_age, options


def test_postgresql_gets_a_pool_of_four_by_default():
    engine, max_age, options = database_settings(DATABASE_URL="postgres://u@db.example:5432/p", DB_CONN_MAX_AGE="60")
    assert engine == "django.db.backends.postgresql"
    assert options["pool"] == {"min_size": 1, "max_size": 4, "timeout": 30}
    assert max_age == 0  # a pooled connection goes back to the pool, whatever DB_CONN_MAX_AGE says


def test_the_pool_follows_its_settings_and_zero_turns_it_off():
    _, _, options = database_settings(
        DATABASE_URL="postgres://u@db.example:5432/p", DB_POOL_MAX="2", DB_POOL_TIMEOUT_SECONDS="5"
    )
    assert options["pool"] == {"min_size": 1, "max_size": 2, "timeout": 5}
    _, max_age, options = database_settings(
        DATABASE_URL="postgres://u@db.example:5432/p", DB_POOL_MAX="0", DB_CONN_MAX_AGE="60"
    )
    assert "pool" not in options and max_age == 60  # behind PgBouncer, say: a connection per thread, kept


def test_sqlite_has_no_pool(tmp_path):
    engine, _, options = database_settings(DATABASE_URL=f"sqlite:///{tmp_path}/x.sqlite3")
    assert engine == "django.db.backends.sqlite3" and "pool" not in options
    assert options["transaction_mode"] == "IMMEDIATE"  # its writers queue on the write lock, as ever


def test_a_negative_pool_is_refused():
    with pytest.raises(subprocess.CalledProcessError) as refused:
        database_settings(DATABASE_URL="postgres://u@db.example:5432/p", DB_POOL_MAX="-1")
    assert "DB_POOL_MAX=-1 is below the minimum of 0" in refused.value.stderr
