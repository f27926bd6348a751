"""Shared fixtures: the personas every test uses, and a real Celery worker process on the test database.

Only fixtures every test needs belong here. Test files go into the folder of their subject and helpers into
tests/support/, one module per concern: tests/README.md says which subject goes where."""

import http.server
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest
import redis
from channels.layers import channel_layers
from django.conf import settings
from django.db import connection
from django.test import Client

from agent_platform.models import ApiKey, Membership, Workspace
from tests.messages_stub import messages_stub, messages_stub_server  # noqa: F401  (fixtures for every test)
from tests.support import otlp_receiver as otlp
from tests.support.clients import ApiClient, client_for, make_user
from tests.support.flush import deletes_suffice, flushing_by_delete
from tests.support.paths import PAGES
from tests.support.workers import shared_worker, worker_environment

otlp_receiver = otlp.otlp_receiver

# Fixtures that start a real process of ours (a Celery worker, the ASGI server, the scripted model), a Chromium, or
# whole hosts. A test that uses one is marked by it, so `make test-fast` (`-m "not worker and not browser and not
# slow"`) leaves it out without every file having to remember its own marker.
WORKER_FIXTURES = frozenset(
    {
        "celery_worker",
        "runtime_worker",
        "short_limit_worker",
        "fault_worker",
        "human_timeout_worker",
        "files_worker",
        "asgi_server",
        "scripted_model",
    }
)
BROWSER_FIXTURES = frozenset({"host", "chromium", "signed_in_page"})
SLOW_FIXTURES = frozenset({"network", "services", "web", "worker_pool", "worker_hosts"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixtures, marker in (
            (WORKER_FIXTURES, pytest.mark.worker),
            (BROWSER_FIXTURES, pytest.mark.browser),
            (SLOW_FIXTURES, pytest.mark.slow),
        ):
            if used & fixtures:
                item.add_marker(marker)


@pytest.fixture
def acme(db) -> Workspace:
    return Workspace.objects.create(name="Acme", slug="acme")


@pytest.fixture
def umbrella(db) -> Workspace:
    return Workspace.objects.create(name="Umbrella", slug="umbrella")


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


@pytest.fixture
def api(acme_key) -> ApiClient:
    """Acme's API client."""
    return ApiClient(acme_key)


@pytest.fixture
def umbrella_api(umbrella_key) -> ApiClient:
    return ApiClient(umbrella_key)


# The test process's own pool (the workers and web servers it starts keep the product's DB_POOL_MAX). This process is
# no product process: besides the tests, threads of the Messages stub, whose scripted replies read and write through the
# ORM, of the test sites and of Playwright take connections, and one that a thread keeps until it ends is lost to the
# pool. With the product's 4, a few of those left the test process waiting for a connection to flush the database,
# and every later test erred (CI, at two thirds of the PostgreSQL run; py-spy showed the flush waiting on the pool).
TEST_PROCESS_POOL_MAX = 20


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix) -> None:
    """On SQLite the test database is a file (settings), replaced by each session; a session killed midway can leave
    its WAL beside it, which SQLite would replay into the new database: remove those first. On PostgreSQL
    this process's pool is TEST_PROCESS_POOL_MAX."""
    database = settings.DATABASES["default"]
    test_name = database.get("TEST", {}).get("NAME")
    if database["ENGINE"].endswith("sqlite3") and test_name:
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{test_name}{suffix}").unlink(missing_ok=True)
    if pool := database.get("OPTIONS", {}).get("pool"):
        pool["max_size"] = TEST_PROCESS_POOL_MAX


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, and before it is dropped on PostgreSQL, an end to every other session still on
    it: the ORM called between sync Playwright calls opens a connection in Playwright's greenlet, a context no
    fixture's teardown reaches, and that connection would stop the drop ("being accessed by other users"). The
    workers and servers the tests started are gone by then (their fixtures depend on this one)."""
    with django_db_blocker.unblock():
        by_delete = deletes_suffice()
    with flushing_by_delete() if by_delete else nullcontext():
        yield
    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


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


@pytest.fixture(scope="session")
def clean_broker():
    """Start each session with empty queues, so no task of an earlier session reaches this one's worker."""
    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture(scope="session")
def celery_worker(request, django_db_setup, django_db_blocker, clean_broker, tmp_path_factory):
    """One worker for the whole session; tests that use it need committed data (`transactional_db`)."""
    request.getfixturevalue("messages_stub_server")  # ANTHROPIC_BASE_URL must be set before the worker starts
    # It exports its traces to the session's OTLP receiver (tests/observability read them), in batches sent soon.
    receiver = request.getfixturevalue("otlp_receiver")

    def environment() -> dict:
        return worker_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"})

    return shared_worker(request, tmp_path_factory, django_db_blocker, "celery", "runs,judge,default", environment)


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> None:
    """Each test gets channel layer objects of its own. channels_redis keeps its receive lock per layer object, bound to
    the event loop that first waited on it: a consumer an earlier test left waiting in a loop now gone would hold it,
    and every later receive in this process would fail ("bound to a different event loop")."""
    channel_layers.backends.clear()


@pytest.fixture(scope="session", autouse=True)
def models_api(request):
    """Every launch asks the Models API about its model: in tests the stub answers it, from its catalogue."""
    from agent_platform.llm import forget_profiles

    stub = request.getfixturevalue("messages_stub_server")
    forget_profiles()
    yield stub
