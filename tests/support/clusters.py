"""A throwaway PostgreSQL cluster: initialised as the `postgres` OS user (the server refuses to run as root) in a
folder of the test's, without fsync (nothing outlives it). `hosts.py` starts one on a services host; `private_cluster`
starts one on a free loopback port of this machine, with the settings a test gives (max_connections, say)."""

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from glob import glob
from pathlib import Path
from typing import Any

import psycopg

from tests.support.sites import free_port

DATABASE = "pilothouse"
START_TIMEOUT_SECONDS = 120


def postgres_binary(name: str) -> str:
    found = sorted(glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda path: int(Path(path).parts[4]))
    if not found:
        raise RuntimeError(f"no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/{name}): install postgresql")
    return found[-1]


def prepare(directory: Path) -> tuple[Path, Path]:
    """The cluster's data folder and Unix socket folder under `directory`, owned by `postgres`."""
    data, sockets = directory / "postgres", directory / "postgres-socket"
    for folder in (data, sockets):
        folder.mkdir()
        shutil.chown(folder, "postgres", "postgres")
    data.chmod(0o700)
    return data, sockets


def initdb_command(data: Path) -> list[str]:
    return ["runuser", "-u", "postgres", "--", postgres_binary("initdb"), "-D", str(data), "-A", "trust", "-U",
            "postgres", "-E", "UTF8", "--no-sync"]  # fmt: skip


def server_command(data: Path, sockets: Path, address: str, port: int, settings: Sequence[str] = ()) -> list[str]:
    """The server on `address:port` only, without durability; `settings` are more `name=value` of its own."""
    return [
        "runuser", "-u", "postgres", "--", postgres_binary("postgres"), "-D", str(data),
        "-c", f"listen_addresses={address}", "-c", f"unix_socket_directories={sockets}", "-c", f"port={port}",
        "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
        *(part for setting in settings for part in ("-c", setting)),
    ]  # fmt: skip


def accepting(server: str) -> bool:
    try:
        with psycopg.connect(server, connect_timeout=2, autocommit=True):
            return True
    except psycopg.OperationalError:
        return False


@dataclass
class Cluster:
    port: int
    log: Path

    def url(self, database: str = DATABASE) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url(), autocommit=True) as connection:
            return connection.execute(sql, params).fetchall()


@contextmanager
def private_cluster(settings: Sequence[str] = ()) -> Iterator[Cluster]:
    """A cluster of its own on 127.0.0.1 (a free port) with database `pilothouse`, stopped and removed after. Its
    folder is one the `postgres` user can reach (a test's tmp_path is private to root)."""
    directory = Path(tempfile.mkdtemp(prefix="pilothouse-postgres-"))
    directory.chmod(0o755)
    data, sockets = prepare(directory)
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(initdb_command(data), check=True, capture_output=True)
        cluster = Cluster(free_port(), directory / "postgres.log")
        with open(cluster.log, "ab") as log:
            server = subprocess.Popen(
                server_command(data, sockets, "127.0.0.1", cluster.port, settings),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not accepting(cluster.url("postgres")):
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start:\n{cluster.log.read_text()[-4000:]}")
            time.sleep(0.2)
        with psycopg.connect(cluster.url("postgres"), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {DATABASE}")
        yield cluster
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)  # a fast shutdown: the clients' sessions end (SIGTERM waits for them)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(directory, ignore_errors=True)
