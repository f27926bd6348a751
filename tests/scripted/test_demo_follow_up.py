"""The demo as `make run` serves it on a port other than the default: the scripted model, started as its own process
with the demo site's address, sends a follow-up run (no start URL) to that address, and the egress policy, which
allows the demo site's port only, lets it through."""

import os
import signal
import socketserver
import subprocess
import sys
import threading
import wsgiref.simple_server
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from agent_platform.models import ModelRequest
from demo_site import server as demo_server
from demo_site.views import PRODUCTS
from runs.models import Run
from tests.support.factories import make_run
from tests.support.launching import enqueue, events, finished
from tests.support.paths import REPO
from tests.support.workers import WorkerProcess, worker_environment

QUEUE = "demo-follow-up-tests"

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


class ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def demo_base_url() -> Iterator[str]:
    """The demo site's own server on an ephemeral port (never the default one)."""
    demo = wsgiref.simple_server.make_server(
        "127.0.0.1", 0, demo_server.wsgi_application(), server_class=ThreadingWSGIServer, handler_class=QuietHandler
    )
    threading.Thread(target=demo.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{demo.server_address[1]}/"
    demo.shutdown()
    demo.server_close()


@pytest.fixture
def scripted_model(demo_base_url: str) -> Iterator[str]:
    """`python -m scripted_api` as `make run` starts it: DEMO_BASE_URL in its environment, nothing on its command
    line. Yields its base URL."""
    command = subprocess.Popen(
        [sys.executable, "-m", "scripted_api", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "DEMO_BASE_URL": demo_base_url},
    )
    try:
        banner = command.stdout.readline()
        yield banner.split(" on ")[1].split(" ")[0]
    finally:
        command.send_signal(signal.SIGTERM)
        command.wait(timeout=10)


@pytest.fixture
def demo_worker(
    request, django_db_blocker, clean_broker, demo_base_url: str, scripted_model: str, tmp_path
) -> Iterator[WorkerProcess]:
    """A worker configured as `make run` configures it without a key: the scripted model, the demo's address, and
    the default allowance (the demo site's port only)."""
    port = demo_base_url.rstrip("/").rsplit(":", 1)[1]
    with django_db_blocker.unblock():
        env = worker_environment(
            {
                "ANTHROPIC_BASE_URL": scripted_model,
                "ANTHROPIC_API_KEY": "scripted-demo",
                "SCRIPTED_MODEL": "true",
                "DEMO_BASE_URL": demo_base_url,
                "BROWSER_ALLOWED_PRIVATE_HOSTS": f"127.0.0.1:{port},localhost:{port}",
                "MEDIA_ROOT": str(tmp_path / "media"),
            }
        )
    env.pop("DEMO_PORT", None)
    worker = WorkerProcess(env, tmp_path / "worker.log", queues=QUEUE).start()
    yield worker
    worker.stop()


def test_a_follow_up_run_on_a_non_default_demo_port_reaches_the_demo_shop(acme, demo_base_url, demo_worker):
    # A cap no real request fits under: the scripted model's requests bill nothing, so it never applies to them.
    first = enqueue(
        make_run(
            acme,
            task="List the products on the first page of the demo shop.",
            start_url=f"{demo_base_url}demo/",
            max_cost_usd=Decimal("0.0001"),
        ),
        queue=QUEUE,
    )
    first = finished(first)
    assert first.status == Run.Status.SUCCEEDED, first.error_message

    # A follow-up names no start URL: the scripted model must take the demo site's address from its configuration.
    follow_up = enqueue(
        make_run(acme, session=first.session, task="List the products of the demo shop again, with their prices."),
        queue=QUEUE,
    )
    follow_up = finished(follow_up)

    assert follow_up.status == Run.Status.SUCCEEDED, follow_up.error_message
    navigations = [event.payload["input"] for event in events(follow_up, "agent.tool_use")]
    assert navigations[0] == {"url": f"{demo_base_url}demo/shop/"}
    assert events(follow_up, "network.blocked") == []
    assert all(product.name in follow_up.output for product in PRODUCTS[:4])
    requests = ModelRequest.objects.filter(run__in=[first, follow_up])
    assert requests.count() == first.usage_requests + follow_up.usage_requests > 0
    assert set(requests.values_list("scripted", "cost_usd", "unpriced")) == {(True, Decimal(0), False)}
    assert (first.cost_usd, follow_up.cost_usd) == (Decimal(0), Decimal(0))
