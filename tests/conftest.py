"""Shared fixtures: the personas every test uses, and a real Celery worker process on the test database."""

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from agent_platform.models import ApiKey, Membership, Workspace
from tests.messages_stub import messages_stub, messages_stub_server  # noqa: F401  (fixtures for every test)

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "tests" / "pages"


@pytest.fixture
def acme(db) -> Workspace:
    return Workspace.objects.create(name="Acme", slug="acme")


@pytest.fixture
def umbrella(db) -> Workspace:
    return Workspace.objects.create(name="Umbrella", slug="umbrella")


def make_user(username: str, workspace: Workspace | None, role: str = Membership.Role.MEMBER):
    user = get_user_model().objects.create_user(username=username, password=f"{username}-password-123")
    if workspace is not None:
        Membership.objects.create(user=user, workspace=workspace, role=role)
    return user


@pytest.fixture
def alice(acme):
    """The owner of Acme."""
    return make_user("alice", acme, Membership.Role.OWNER)


@pytest.fixture
def bob(acme):
    """A member of Acme."""
    return make_user("bob", acme)


@pytest.fixture
def charlie(umbrella):
    """A member of another workspace only: refused everything of Acme's."""
    return make_user("charlie", umbrella)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice_client(alice) -> Client:
    return client_for(alice)


@pytest.fixture
def charlie_client(charlie) -> Client:
    return client_for(charlie)


@pytest.fixture
def acme_key(acme) -> str:
    """A working API key secret for Acme."""
    return ApiKey.issue(acme, name="tests")[1]


@pytest.fixture
def umbrella_key(umbrella) -> str:
    return ApiKey.issue(umbrella, name="tests")[1]


class ApiClient:
    """Django's test client with a bearer key and JSON bodies."""

    def __init__(self, key: str | None):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def _call(self, method: str, path: str, body=None, headers: dict | None = None, raw: str | None = None):
        import json

        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs = {"headers": {**self.headers, **(headers or {})}}
        if data is not None:
            kwargs["data"] = data
            kwargs["content_type"] = "application/json"
        return getattr(self.client, method)(f"/api/v1{path}", **kwargs)

    def get(self, path: str, **kwargs):
        return self._call("get", path, **kwargs)

    def post(self, path: str, body=None, **kwargs):
        return self._call("post", path, body, **kwargs)


@pytest.fixture
def api(acme_key) -> ApiClient:
    """Acme's API client."""
    return ApiClient(acme_key)


@pytest.fixture
def umbrella_api(umbrella_key) -> ApiClient:
    return ApiClient(umbrella_key)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix) -> None:
    """On SQLite the test database is a file (settings), replaced by each session; a session killed midway can leave
    its WAL beside it, which SQLite would replay into the new database: remove those first."""
    database = settings.DATABASES["default"]
    test_name = database.get("TEST", {}).get("NAME")
    if database["ENGINE"].endswith("sqlite3") and test_name:
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{test_name}{suffix}").unlink(missing_ok=True)


# --- the test pages over HTTP ----------------------------------------------------------------------------------


class PagesHandler(http.server.SimpleHTTPRequestHandler):
    """Serves tests/pages, plus /redirect?to=URL answering 302 to URL; logs nothing."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(PAGES), **kwargs)

    def do_GET(self) -> None:
        if self.path.startswith("/redirect?to="):
            self.send_response(302)
            self.send_header("Location", urllib.parse.unquote(self.path.split("=", 1)[1]))
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args) -> None:
        pass


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """The test pages on 127.0.0.1 (a private host the workers' settings allow)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PagesHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


# --- a real Celery worker ------------------------------------------------------------------------------------


def worker_environment(extra: dict | None = None) -> dict:
    """The environment of a worker subprocess: this test session's database, broker and model endpoint."""
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "agent_platform.settings",
            "REDIS_URL": settings.REDIS_URL,
            "PYTHONUNBUFFERED": "1",
            # The test pages are served on ephemeral ports of 127.0.0.1, so the workers allow that host on every
            # port (the default allowance is the demo site's port only); tests of the default pass their own.
            "BROWSER_ALLOWED_PRIVATE_HOSTS": os.environ.get("BROWSER_ALLOWED_PRIVATE_HOSTS", "127.0.0.1"),
        }
    )
    if db["ENGINE"].endswith("postgresql"):
        env["DATABASE_URL"] = (
            f"postgres://{db['USER']}:{db.get('PASSWORD') or ''}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        )
    else:
        env["DATABASE_URL"] = f"sqlite:///{db['NAME']}"
    env.update(extra or {})
    return env


class WorkerProcess:
    """A `celery worker` subprocess; by default it consumes every queue, as `make run` starts it. Tests that need a
    worker with another environment give it a queue of its own, so no other worker takes their runs."""

    def __init__(self, env: dict, log_path: Path, concurrency: int = 4, queues: str = "runs,judge,default"):
        self.env = env
        self.log_path = log_path
        self.concurrency = concurrency
        self.queues = queues
        self.process: subprocess.Popen | None = None

    def start(self) -> "WorkerProcess":
        self.log = open(self.log_path, "ab")  # noqa: SIM115  (kept open for the process's lifetime)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "agent_platform", "worker", "-Q", self.queues,
             "--pool", "threads", "--concurrency", str(self.concurrency), "--without-mingle", "--without-gossip",
             "--loglevel", "INFO", "-n", f"tests-{self.queues}-{time.monotonic_ns()}@%h"],
            cwd=REPO, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"celery worker exited early:\n{self.log_path.read_text()[-4000:]}")
            if b"ready." in self.log_path.read_bytes():
                return
            time.sleep(0.2)
        raise RuntimeError(f"celery worker not ready in {timeout}s:\n{self.log_path.read_text()[-4000:]}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


@pytest.fixture(scope="session")
def clean_broker():
    """Start each session with empty queues, so no task of an earlier session reaches this one's worker."""
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture(scope="session")
def celery_worker(request, django_db_setup, django_db_blocker, clean_broker, tmp_path_factory):
    """One worker for the whole session; tests that use it need committed data (`transactional_db`)."""
    request.getfixturevalue("messages_stub_server")  # ANTHROPIC_BASE_URL must be set before the worker starts
    with django_db_blocker.unblock():
        env = worker_environment()
    worker = WorkerProcess(env, tmp_path_factory.mktemp("worker") / "worker.log").start()
    yield worker
    worker.stop()


@pytest.fixture(scope="session", autouse=True)
def models_api(request):
    """Every launch asks the Models API about its model: in tests the stub answers it, from its catalogue."""
    from agent_platform.llm import forget_profiles

    stub = request.getfixturevalue("messages_stub_server")
    forget_profiles()
    yield stub


def wait_for(predicate, timeout: float = 30, interval: float = 0.1, message: str = "condition"):
    """Poll until predicate() is truthy and return its value; fail the test with `message` after `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {message}")
