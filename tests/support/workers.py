"""Real Celery worker subprocesses on the test database: their environment, the process, and the workers the runtime,
fault and security tests share (each on a queue of its own, so no other test's worker, with another environment,
takes their runs)."""

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from tests.support.canaries import CANARY_ANTHROPIC_KEY
from tests.support.paths import REPO


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

    def __init__(
        self,
        env: dict,
        log_path: Path,
        concurrency: int = 4,
        queues: str = "runs,judge,default",
        *,
        name: str | None = None,
        launcher: tuple[str, ...] = (),
    ):
        """`name`: the worker's Celery node name (a run's `worker`); `launcher`: a command the worker is started
        through, which must exec it (`ip netns exec NS`: the worker on another host, tests/support/netns.py)."""
        self.env = env
        self.log_path = log_path
        self.concurrency = concurrency
        self.queues = queues
        # the node name, as a run's `worker` names the worker that executes it
        self.name = name or f"tests-{queues}-{time.monotonic_ns()}@{socket.gethostname()}"
        self.launcher = launcher
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "WorkerProcess":
        self.spawn()
        try:
            self.wait_ready(timeout)
        except RuntimeError:
            self.kill()  # not left consuming this Redis database's queues with a stale environment
            raise
        return self

    def spawn(self) -> "WorkerProcess":
        """Start the process without waiting for it to be ready (`wait_ready`): several workers start at once."""
        self.log = open(self.log_path, "ab")  # noqa: SIM115  (kept open for the process's lifetime)
        self.process = subprocess.Popen(
            [*self.launcher, sys.executable, "-m", "celery", "-A", "agent_platform", "worker", "-Q", self.queues,
             "--pool", "threads", "--concurrency", str(self.concurrency), "--without-mingle", "--without-gossip",
             "--loglevel", "INFO", "-n", self.name],
            cwd=REPO, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
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

    def terminate(self) -> None:
        """Tell the worker to stop, without waiting for it (`stop` waits)."""
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


# The shared workers, started once a session however many test modules bind their fixtures.
_shared: dict[str, Any] = {}


def _stop_worker(name: str) -> None:
    # The first shared worker stopped at the session's end tells every other one to stop as well, so the session
    # waits for the slowest worker's shutdown rather than for their sum.
    for other in _shared.values():
        other.terminate()
    worker = _shared.pop(name, None)
    if worker is not None:
        worker.stop()


def shared_worker(
    request,
    tmp_path_factory,
    django_db_blocker,
    name: str,
    queue: str,
    environment: Callable[[], dict],
    ready_timeout: float = 60,
) -> WorkerProcess:
    """The session's worker called `name` on `queue`, started on first use with `environment()` (read with the
    database unblocked) and stopped at the session's end."""
    if name not in _shared:
        with django_db_blocker.unblock():
            env = environment()
        log_path = tmp_path_factory.mktemp(f"{name}-worker") / "worker.log"
        _shared[name] = WorkerProcess(env, log_path, queues=queue).start(ready_timeout)
        request.addfinalizer(lambda: _stop_worker(name))
    return _shared[name]


# --- the runtime tests' workers ------------------------------------------------------------------------------

RUNTIME_QUEUE = "runtime-tests"


@pytest.fixture(scope="session")
def runtime_worker(
    request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory
) -> WorkerProcess:
    """One worker for every runtime test module, pointed at the Messages stub; retries kept few and fast."""
    media = tmp_path_factory.mktemp("runtime-media")

    def environment() -> dict:
        return worker_environment({"MODEL_MAX_RETRIES": "2", "MEDIA_ROOT": str(media)})

    worker = shared_worker(request, tmp_path_factory, django_db_blocker, "runtime", RUNTIME_QUEUE, environment)
    if not hasattr(worker, "media_root"):
        worker.media_root = media
    return worker


SHORT_LIMIT_QUEUE = "runtime-tests-short-limit"
SHORT_LIMIT_SECONDS = 10  # the setting's minimum


@pytest.fixture(scope="session")
def short_limit_worker(
    request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory
) -> WorkerProcess:
    """A second worker whose runs have the shortest wall-clock limit, and which labels its runs scripted."""

    def environment() -> dict:
        return worker_environment(
            {
                "RUN_TIME_LIMIT_SECONDS": str(SHORT_LIMIT_SECONDS),
                "SCRIPTED_MODEL": "true",
                "MEDIA_ROOT": str(tmp_path_factory.mktemp("runtime-media-short")),
            }
        )

    return shared_worker(request, tmp_path_factory, django_db_blocker, "short", SHORT_LIMIT_QUEUE, environment)


# --- the fault and security tests' worker --------------------------------------------------------------------

FAULT_QUEUE = "fault-tests"


def fault_worker_environment(extra: dict | None = None) -> dict:
    """The fault worker's environment: only `localhost` is an allowed private host, so 127.0.0.1 stays refused; a
    short model timeout and few retries keep model-failure tests fast; a canary Anthropic key to hunt for."""
    return worker_environment(
        {
            "BROWSER_ALLOWED_PRIVATE_HOSTS": "localhost",
            "MODEL_MAX_RETRIES": "2",
            "MODEL_TIMEOUT_SECONDS": "2",
            "BROWSER_ACTION_TIMEOUT_SECONDS": "1",
            "ANTHROPIC_API_KEY": CANARY_ANTHROPIC_KEY,
            **(extra or {}),
        }
    )


@pytest.fixture(scope="session")
def fault_worker(
    request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory
) -> WorkerProcess:
    """One worker for the fault and security tests, pointed at the Messages stub."""

    def environment() -> dict:
        return fault_worker_environment({"MEDIA_ROOT": str(tmp_path_factory.mktemp("fault-media"))})

    return shared_worker(request, tmp_path_factory, django_db_blocker, "fault", FAULT_QUEUE, environment)


# --- the person-in-the-loop tests' short-wait worker -----------------------------------------------------------

HUMAN_TIMEOUT_QUEUE = "human-tests-timeout"
HUMAN_TIME_LIMIT_SECONDS = 10  # the setting's minimum
HUMAN_INPUT_TIMEOUT_SECONDS = 12  # longer than the run's whole time limit: waiting must not count toward it
HUMAN_STALE_AFTER_SECONDS = 8


@pytest.fixture(scope="session")
def human_timeout_worker(
    request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory
) -> WorkerProcess:
    """A worker whose runs wait for a person a short time (longer than their whole time limit) and heartbeat often
    enough that a short stale threshold would catch a run that stopped."""

    def environment() -> dict:
        return worker_environment(
            {
                "RUN_TIME_LIMIT_SECONDS": str(HUMAN_TIME_LIMIT_SECONDS),
                "RUN_INPUT_TIMEOUT_SECONDS": str(HUMAN_INPUT_TIMEOUT_SECONDS),
                "RUN_STALE_AFTER_SECONDS": str(HUMAN_STALE_AFTER_SECONDS),
                "MEDIA_ROOT": str(tmp_path_factory.mktemp("human-media")),
            }
        )

    return shared_worker(
        request, tmp_path_factory, django_db_blocker, "human-timeout", HUMAN_TIMEOUT_QUEUE, environment
    )
