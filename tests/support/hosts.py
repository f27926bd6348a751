"""Pilothouse on several hosts of one machine (tests/support/netns.py): a services host (a throwaway PostgreSQL
cluster and a Redis, each bound to the host's own address, and the S3 server), a web host (migrated from there, Daphne
and the one Celery beat, as `make run` starts them) and worker hosts (Celery workers as tests/support/workers.py
starts them). Every host has its own directory, MEDIA_ROOT and var/: they share nothing but the network and the
variables docs/scaling.md lists. The Messages stub and the test pages are served by the test process on the bridge's
address, the one address of the root namespace the hosts reach.

Fixtures: `network` (package), `messages_stub_host` and `pages_site` (package, on the bridge), `services` and `web`
(package), `hosts_stub` (the stub emptied per test, its refusals checked), `worker_pool` (package) and `worker_hosts`
(two live worker hosts for a test: a host an earlier test killed is replaced). tests/hosts/conftest.py binds them
once, so every module of tests/hosts shares one set of hosts, started once and torn down after the package's last
test.
"""

import base64
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis

from scripted_api.stub import MessagesStub
from tests.support import clusters
from tests.support import s3_server as s3
from tests.support.launching import wait_for
from tests.support.netns import Host, Network
from tests.support.sites import RecordingSite
from tests.support.workers import WorkerProcess

DATABASE = "pilothouse"
POSTGRES_PORT = 5432
REDIS_PORT = 6379
S3_PORT = 9000
WEB_PORT = 8000
# Upper bounds, not expected times: on a loaded CI machine measuring coverage a start-up takes several times longer.
START_TIMEOUT_SECONDS = 120
RUN_TIMEOUT_SECONDS = 90
OPERATOR = "operator"
# What a host's environment keeps of the test process's: the basics, and coverage's own variables so the hosts'
# Python processes measure themselves as every subprocess of `make test` does. Nothing else: no DATABASE_URL,
# REDIS_URL or ANTHROPIC_* of the test session leaks to a host.
KEPT_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TZ")
KEPT_PREFIXES = ("COVERAGE", "COV_CORE")


def base_environment(host: Host) -> dict[str, str]:
    kept = {
        name: value for name, value in os.environ.items() if name in KEPT_VARIABLES or name.startswith(KEPT_PREFIXES)
    }
    return {
        **kept,
        "DJANGO_SETTINGS_MODULE": "agent_platform.settings",
        "PYTHONUNBUFFERED": "1",
        # This host's own disk: the generated keys' folder, browser pid files, a run's files while it runs, and
        # MEDIA_ROOT, which stays empty (files are in the bucket).
        "PILOTHOUSE_VAR_DIR": str(host.directory / "var"),
        "MEDIA_ROOT": str(host.directory / "media"),
    }


def files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


def wait_serving(predicate: Callable[[], bool], host: Host, log_name: str, what: str) -> None:
    """Wait (bounded) for a server on `host` to answer; a timeout fails the test with the end of the server's log,
    read then (the host's folder goes at teardown)."""
    try:
        wait_for(predicate, timeout=START_TIMEOUT_SECONDS, interval=0.2, message=f"{what} on {host.role}")
    except pytest.fail.Exception as timed_out:
        pytest.fail(f"{timed_out}\n{log_name}:\n{host.log(log_name)[-4000:]}")


# --- the network, and what the test process serves on it ------------------------------------------------------------


@pytest.fixture(scope="package")
def network() -> Iterator[Network]:
    """The test's network, torn down at the package's end. Its folder is outside pytest's (which only root may enter)
    so PostgreSQL, running as `postgres`, can reach its data directory."""
    directory = Path(tempfile.mkdtemp(prefix="pilothouse-hosts-"))
    directory.chmod(0o755)
    try:
        built = Network(directory)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    try:
        yield built
    finally:
        try:
            built.close()
        finally:
            shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="package")
def messages_stub_host(network: Network) -> Iterator[MessagesStub]:
    """The strict Messages stub on the bridge's address: the web host asks it about models, the workers for turns."""
    stub = MessagesStub(host=network.gateway).start()
    try:
        yield stub
    finally:
        stub.stop()


@pytest.fixture
def hosts_stub(messages_stub_host: MessagesStub) -> Iterator[MessagesStub]:
    """The stub emptied for this test; a request it refused that the test did not announce fails the test."""
    messages_stub_host.reset()
    yield messages_stub_host
    unexpected = messages_stub_host.unexpected_refusals()
    messages_stub_host.reset()
    if unexpected:
        pytest.fail(
            "the Messages stub refused requests:\n" + "\n".join(f"  - {r.full_message}" for r in unexpected),
            pytrace=False,
        )


@pytest.fixture(scope="package")
def pages_site(network: Network) -> Iterator[str]:
    """The test pages on the bridge's address (the workers allow that host): a site the workers' browsers reach."""
    site = RecordingSite((network.gateway, 0))
    thread = threading.Thread(target=site.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{network.gateway}:{site.server_address[1]}"
    finally:
        site.shutdown()
        site.server_close()


# --- the services host -----------------------------------------------------------------------------------------------


@dataclass
class Services:
    host: Host
    s3: s3.S3Server
    redis_password: str

    @property
    def database_url(self) -> str:
        return f"postgres://postgres@{self.host.address}:{POSTGRES_PORT}/{DATABASE}"

    @property
    def redis_url(self) -> str:
        return f"redis://:{self.redis_password}@{self.host.address}:{REDIS_PORT}/0"

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Rows read straight from the services host's PostgreSQL (what no API says: a run's worker)."""
        with psycopg.connect(self.database_url, connect_timeout=10) as connection:
            return connection.execute(sql, params).fetchall()

    def run_worker(self, run_id: str) -> str:
        rows = self.query("SELECT worker FROM runs_run WHERE public_id = %s", run_id)
        return str(rows[0][0]) if rows else ""


def start_postgres(host: Host) -> None:
    """A throwaway cluster (tests/support/clusters.py) listening on the host's address only (its Unix socket in its own
    folder), trusting connections from the test's subnet."""
    data, sockets = clusters.prepare(host.directory)
    env = base_environment(host)
    host.run(clusters.initdb_command(data), env=env)
    subnet = host.address.rsplit(".", 1)[0] + ".0/24"
    with open(data / "pg_hba.conf", "a") as hba:
        hba.write(f"host all all {subnet} trust\n")
    host.start(
        clusters.server_command(data, sockets, host.address, POSTGRES_PORT, ["max_connections=200"]),
        env=env,
        log_name="postgres.log",
    )
    server = f"postgres://postgres@{host.address}:{POSTGRES_PORT}/postgres"
    wait_serving(lambda: clusters.accepting(server), host, "postgres.log", "PostgreSQL")
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {DATABASE}")


def start_redis(host: Host, password: str) -> None:
    """Bound to the host's address only, with a password (Redis refuses other hosts without one: protected mode), as
    docs/scaling.md says to run it; a broker and channel layer, nothing kept on disk (as `make run`'s)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("no redis-server on PATH")
    host.start(
        [binary, "--bind", host.address, "--port", str(REDIS_PORT), "--requirepass", password, "--save", "",
         "--appendonly", "no", "--dir", str(host.directory)],
        env=base_environment(host), log_name="redis.log",
    )  # fmt: skip
    client = redis.Redis(host=host.address, port=REDIS_PORT, password=password, socket_connect_timeout=2)

    def answering() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    wait_serving(answering, host, "redis.log", "Redis")


def start_s3(host: Host) -> s3.S3Server:
    """moto's S3 server (the object-storage tests' own) on the host's address, with the bucket created."""
    host.start(
        [sys.executable, "-m", "moto.server", "-H", host.address, "-p", str(S3_PORT)],
        env=base_environment(host), log_name="s3.log",
    )  # fmt: skip
    server = s3.S3Server(endpoint=f"http://{host.address}:{S3_PORT}")

    def answering() -> bool:
        try:
            return httpx.get(f"{server.endpoint}/moto-api/", timeout=1, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    wait_serving(answering, host, "s3.log", "the S3 server")
    server.client().create_bucket(Bucket=server.bucket, CreateBucketConfiguration={"LocationConstraint": s3.REGION})
    return server


@pytest.fixture(scope="package")
def services(network: Network) -> Services:
    host = network.add_host("services")
    start_postgres(host)
    redis_password = secrets.token_urlsafe(24)
    start_redis(host, redis_password)
    return Services(host, start_s3(host), redis_password)


# --- what every Pilothouse host is told ------------------------------------------------------------------------------


@dataclass
class Platform:
    """The variables every web and worker host shares (docs/scaling.md, "Running across machines")."""

    services: Services
    stub: MessagesStub
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))
    secrets_key: str = field(default_factory=lambda: base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())

    def environment(self, host: Host, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {
            **base_environment(host),
            "DATABASE_URL": self.services.database_url,
            "REDIS_URL": self.services.redis_url,
            **self.services.s3.environment(),
            "SECRET_KEY": self.secret_key,
            "SECRETS_KEY": self.secrets_key,
            "ANTHROPIC_BASE_URL": self.stub.base_url,
            "ANTHROPIC_API_KEY": "test-key",
            "DEBUG": "false",
            **(extra or {}),
        }


# --- the web host ----------------------------------------------------------------------------------------------------


@dataclass
class Web:
    host: Host
    platform: Platform
    api_key: str
    password: str

    @property
    def url(self) -> str:
        return f"http://{self.host.address}:{WEB_PORT}"

    def api(self) -> httpx.Client:
        """The API as a client program calls it over the network, with the workspace's key."""
        return httpx.Client(
            base_url=f"{self.url}/api/v1", headers={"Authorization": f"Bearer {self.api_key}"}, timeout=30,
            trust_env=False,
        )  # fmt: skip

    def signed_in(self) -> httpx.Client:
        """A browser's session: the operator signed in through the sign-in form (its CSRF token and all)."""
        client = httpx.Client(base_url=self.url, timeout=30, trust_env=False)
        form = client.get("/login/")
        assert form.status_code == 200, form.text[:2000]
        token = client.cookies["csrftoken"]
        answer = client.post(
            "/login/", data={"username": OPERATOR, "password": self.password, "csrfmiddlewaretoken": token}
        )
        assert answer.status_code == 302 and "sessionid" in client.cookies, answer.text[:2000]
        return client

    def launch(self, **body: Any) -> str:
        with self.api() as api:
            launched = api.post("/runs", json=body)
        assert launched.status_code == 201, launched.text
        return str(launched.json()["id"])

    def run(self, run_id: str) -> dict[str, Any]:
        with self.api() as api:
            answer = api.get(f"/runs/{run_id}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def finished(self, run_id: str, timeout: float = RUN_TIMEOUT_SECONDS) -> dict[str, Any]:
        def ended() -> dict[str, Any] | None:
            run = self.run(run_id)
            return run if run["status"] in ("succeeded", "failed", "cancelled") else None

        return dict(wait_for(ended, timeout=timeout, interval=0.5, message=f"run {run_id} to finish"))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """Every event of the run through GET /runs/{id}/events, page after page."""
        found: list[dict[str, Any]] = []
        after = 0
        with self.api() as api:
            while True:
                page = api.get(f"/runs/{run_id}/events", params={"after": after, "limit": 500})
                assert page.status_code == 200, page.text
                body = page.json()
                found.extend(body["events"])
                after = body["next_after"]
                if not body["has_more"]:
                    return found


# The web host's set-up as an operator types it (docs/scaling.md): the checks, migrate, the first operator, an API key.
# One Python process runs the four commands: each `manage.py` would pay Django's start-up again (seconds on a loaded
# machine); `call_command` runs the same commands with the same arguments.
SET_UP_WEB = """
from django.core.management import call_command
call_command("check")
call_command("migrate", interactive=False, verbosity=0)
call_command("ensure_operator", username={operator!r}, url={url!r})
call_command("createapikey", for_user={operator!r}, name="four hosts")
"""


@pytest.fixture(scope="package")
def web(network: Network, services: Services, messages_stub_host: MessagesStub) -> Web:
    """The web host as an operator sets one up: migrate the services host's database from here, create the first
    operator and an API key with the management commands, then Daphne on the host's address and the installation's
    one Celery beat (its reaper finds runs whose worker went silent)."""
    host = network.add_host("web")
    platform = Platform(services, messages_stub_host)
    env = platform.environment(host, {"ALLOWED_HOSTS": host.address})
    script = SET_UP_WEB.format(operator=OPERATOR, url=f"http://{host.address}:{WEB_PORT}/")
    said = host.run([sys.executable, "manage.py", "shell", "--no-imports", "-c", script], env=env)
    password = re.search(r"password: (\S+)", said)
    assert password, said
    api_key = said.strip().splitlines()[-1]  # createapikey prints the secret alone on the last line
    daphne = host.start(
        [sys.executable, "-m", "daphne", "-b", host.address, "-p", str(WEB_PORT), "agent_platform.asgi:application"],
        env=env, log_name="web.log",
    )  # fmt: skip
    host.start(
        [sys.executable, "-m", "celery", "-A", "agent_platform", "beat", "--loglevel", "INFO",
         "--schedule", str(host.directory / "beat-schedule")],
        env=env, log_name="beat.log",
    )  # fmt: skip
    built = Web(host, platform, api_key, password.group(1))

    def serving() -> bool:
        assert daphne.poll() is None, f"daphne exited:\n{host.log('web.log')}"
        try:
            return httpx.get(f"{built.url}/login/", timeout=2, trust_env=False).status_code == 200
        except httpx.HTTPError:
            return False

    wait_serving(serving, host, "web.log", "Daphne")
    return built


# --- the worker hosts ------------------------------------------------------------------------------------------------


@dataclass
class WorkerHost:
    host: Host
    worker: WorkerProcess

    @property
    def name(self) -> str:
        """The Celery node name: what a run's `worker` says."""
        return self.worker.name

    @property
    def media_root(self) -> Path:
        return self.host.directory / "media"


# The stale-heartbeat threshold the worker hosts use (the setting's minimum): a lost worker is noticed within it and
# the beat's next reaping (every 30 s).
WORKER_STALE_AFTER_SECONDS = 5
# Every queue, as `make run`'s worker and docs/scaling.md's worker machines consume them (browser sessions included).
WORKER_QUEUES = "runs,judge,default,browsers"


def start_worker_host(network: Network, web: Web, role: str) -> WorkerHost:
    host = network.add_host(role)
    env = web.platform.environment(
        host,
        {
            # The test pages are on the bridge's address: the one private host the agent's browser may reach.
            "BROWSER_ALLOWED_PRIVATE_HOSTS": network.gateway,
            "RUN_STALE_AFTER_SECONDS": str(WORKER_STALE_AFTER_SECONDS),
            "MODEL_MAX_RETRIES": "2",
        },
    )
    worker = WorkerProcess(
        env, host.directory / "worker.log", concurrency=2, queues=WORKER_QUEUES, name=f"{role}@{host.namespace}",
        launcher=host.launcher(),
    )  # fmt: skip
    worker.spawn()  # the caller waits for it to be ready, so several hosts start at once
    return WorkerHost(host, worker)


WORKER_ROLES = ("worker-a", "worker-b")


def stop_worker_hosts(network: Network, stopping: list[WorkerHost]) -> None:
    for worker_host in stopping:  # every host told to stop at once, then each waited for
        worker_host.host.signal_everything(signal.SIGTERM)
    for worker_host in stopping:
        worker_host.worker.stop()
    for worker_host in stopping:
        network.remove_host(worker_host.host)


@pytest.fixture(scope="package")
def worker_pool(network: Network, services: Services, web: Web) -> Iterator[list[WorkerHost]]:
    """The package's worker hosts (`worker_hosts` fills it), stopped and their namespaces deleted at its end."""
    pool: list[WorkerHost] = []
    try:
        yield pool
    finally:
        stop_worker_hosts(network, pool)


@pytest.fixture
def worker_hosts(network: Network, web: Web, worker_pool: list[WorkerHost]) -> list[WorkerHost]:
    """Two live worker hosts, each consuming every queue as `make run`'s worker does: the package's, where a host an
    earlier test killed is replaced by a new one (a new namespace, folder and worker name), so a test that kills a
    host leaves the next test two hosts again and the hosts start once a package, not once a test."""
    dead = [worker_host for worker_host in worker_pool if worker_host.worker.process.poll() is not None]
    for worker_host in dead:
        worker_pool.remove(worker_host)
    stop_worker_hosts(network, dead)
    taken = {worker_host.host.role for worker_host in worker_pool}
    started = [start_worker_host(network, web, role) for role in WORKER_ROLES if role not in taken]
    worker_pool.extend(started)
    for worker_host in started:
        worker_host.worker.wait_ready(START_TIMEOUT_SECONDS)
    return sorted(worker_pool, key=lambda worker_host: worker_host.host.role)
