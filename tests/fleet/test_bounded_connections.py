"""More runs at once than the database has connections: three worker processes of eight threads each run 24 runs
against a private PostgreSQL cluster with max_connections=20. Each process draws from its pool of DB_POOL_MAX (4)
and gives its connections back before every wait, so every run succeeds, with a gap-free timeline, and the server
never sees more connections than the pools allow."""

import json
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from runs.tasks import execute_run
from tests import messages_stub as stub_fixtures
from tests.support import sites
from tests.support.clusters import private_cluster
from tests.support.paths import REPO
from tests.support.replies import browser, done
from tests.support.sites import site_url
from tests.support.workers import WorkerProcess, worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_site = sites.fault_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.slow]

WORKERS = 3
CONCURRENCY = 8
POOL = 4
RUNS = WORKERS * CONCURRENCY
MAX_CONNECTIONS = 20
QUEUE = "fleet"
MODEL_SECONDS = 1.0  # each reply takes a while, as a real model's does: the runs overlap, waiting on it
RUNS_TIMEOUT_SECONDS = 300

SEED = """
import json, django
django.setup()
from agent_platform.models import Workspace
from tests.support.factories import make_run
runs = []
for index in range({runs}):
    workspace, _ = Workspace.objects.get_or_create(slug=f"fleet-{{index % 3}}", defaults={{"name": "Fleet"}})
    runs.append(make_run(workspace, task=f"Fleet task {{index}}", start_url={start_url!r}).pk)
print(json.dumps(runs))
"""


def three_turns(request: dict) -> dict:
    """Any run's next step from its own conversation (replies cannot cross runs): read the page twice, then finish."""
    time.sleep(MODEL_SECONDS)
    replied = sum(1 for message in request["messages"] if message["role"] == "assistant")
    if replied < 2:
        return browser("get_page_text")
    task = request["messages"][0]["content"][0]["text"].splitlines()[0]
    return done(True, f"Read the page for {task}")


APPLICATION = "pilothouse-fleet-worker"  # the workers' connections in pg_stat_activity (libpq reads PGAPPNAME)


class ConnectionPeak:
    """The most connections the workers had at once, sampled every 100 ms."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.peak = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)

    def sample(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as connection:
            while not self.stopped.wait(0.1):
                (count,) = connection.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APPLICATION]
                ).fetchone()
                self.peak = max(self.peak, count)

    def __enter__(self) -> "ConnectionPeak":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)


def test_more_runs_than_server_connections_all_succeed(tmp_path, fault_site, messages_stub):
    messages_stub.set_fallback(three_turns)
    with private_cluster([f"max_connections={MAX_CONNECTIONS}"]) as cluster:
        env = worker_environment({"DATABASE_URL": cluster.url(), "DB_POOL_MAX": str(POOL), "PGAPPNAME": APPLICATION})
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, check=True,
                       capture_output=True)  # fmt: skip
        seeded = subprocess.run(
            [sys.executable, "-c", SEED.format(runs=RUNS, start_url=f"{site_url(fault_site)}/runtime_shop.html")],
            cwd=REPO, env=env, check=True, capture_output=True, text=True,
        )  # fmt: skip
        run_ids = json.loads(seeded.stdout.strip().splitlines()[-1])
        workers = [
            WorkerProcess(env, tmp_path / f"worker-{index}.log", concurrency=CONCURRENCY, queues=QUEUE).spawn()
            for index in range(WORKERS)
        ]
        try:
            for worker in workers:
                worker.wait_ready(timeout=120)
            with ConnectionPeak(cluster.url()) as connections:
                for run_id in run_ids:
                    execute_run.apply_async(args=[run_id], queue=QUEUE)
                deadline = time.monotonic() + RUNS_TIMEOUT_SECONDS
                while cluster.query(
                    "SELECT count(*) FROM runs_run WHERE status IN ('queued', 'running')"
                )[0][0] and time.monotonic() < deadline:  # fmt: skip
                    time.sleep(0.5)
        finally:
            for worker in workers:
                worker.stop()
        logs = "".join(worker.log_path.read_text(errors="replace") for worker in workers)

        assert "too many clients" not in logs
        runs = cluster.query(
            "SELECT id, task, status, error_code, error_message, output, last_seq, worker FROM runs_run ORDER BY id"
        )
        assert len(runs) == RUNS
        for pk, task, status, error_code, error_message, output, last_seq, _worker in runs:
            assert status == "succeeded", (pk, status, error_code, error_message)
            assert output == f"Read the page for {task}"  # its own conversation, not another run's
            timeline = cluster.query("SELECT seq, type FROM runs_event WHERE run_id = %s ORDER BY seq", pk)
            assert [seq for seq, _ in timeline] == list(range(1, last_seq + 1))  # gap-free, no duplicate
            types = [kind for _, kind in timeline]
            assert types.count("run.started") == 1 and types.count("run.finished") == 1
            assert types.count("agent.tool_result") == 3 and types.count("agent.usage") == 3
        # Every worker process ran some (the runs were more than one process's threads), none ran one twice.
        assert len({worker for *_, worker in runs}) == WORKERS
        assert len(messages_stub.requests) == 3 * RUNS
        # What the pools allow, whatever the threads: DB_POOL_MAX per worker process.
        assert 0 < connections.peak <= WORKERS * POOL, connections.peak
