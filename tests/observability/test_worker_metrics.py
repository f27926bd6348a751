"""A finished run through a real worker: the web's /metrics counts it, and the worker's own endpoint
(WORKER_METRICS_PORT) carries what happened in that process (queue wait, browser steps, model latency, contexts open,
egress refusals)."""

import pytest
from django.conf import settings as django_settings

from agent_platform import metrics
from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support.launching import finished, launch, wait_for
from tests.support.metrics import METRICS_TOKEN, fetch, scrape
from tests.support.replies import browser, done
from tests.support.sites import free_port
from tests.support.workers import WorkerProcess, worker_environment

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

METRICS_QUEUE = "metrics-tests"
REFUSED_URL = "http://10.255.255.1/"  # a private address the workers' policy refuses before any connection

pytestmark = [pytest.mark.worker, pytest.mark.browser]


@pytest.fixture(scope="module")
def metrics_worker(django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory):
    """A worker serving its metrics on a port of its own, on a queue of its own."""
    port = free_port()
    with django_db_blocker.unblock():
        env = worker_environment(
            {
                "METRICS_TOKEN": METRICS_TOKEN,
                "WORKER_METRICS_PORT": str(port),
                "WORKER_METRICS_ADDRESS": "127.0.0.1",
                "MODEL_MAX_RETRIES": "2",
                "MEDIA_ROOT": str(tmp_path_factory.mktemp("metrics-media")),
            }
        )
    worker = WorkerProcess(env, tmp_path_factory.mktemp("metrics-worker") / "worker.log", queues=METRICS_QUEUE)
    try:
        worker.start()
    except BaseException:
        worker.stop()  # a worker slow to get ready must not outlive the session and take a later session's runs
        raise
    worker.metrics_url = f"http://127.0.0.1:{port}/metrics"
    # the endpoint starts as the worker becomes ready: wait until it answers
    wait_for(lambda: fetch(worker.metrics_url)[0] == 200, message="the worker's metrics endpoint")
    yield worker
    worker.stop()


@pytest.mark.django_db(transaction=True)
def test_a_finished_run_is_counted_on_the_web_and_its_work_on_the_worker(
    acme, site, messages_stub, metrics_worker, live_server, settings
):
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_CACHE_SECONDS = 0
    web_url, worker_url = f"{live_server.url}/metrics", metrics_worker.metrics_url
    model, agent = django_settings.DEFAULT_MODEL, {"source": "agent"}
    web_before, worker_before = scrape(web_url), scrape(worker_url)
    during: dict[str, float] = {}

    def first_turn(request: dict) -> dict:
        # asked while the run's browser context is open
        during["contexts"] = scrape(worker_url).value("pilothouse_browser_contexts_open")
        return browser("navigate", url=REFUSED_URL)

    messages_stub.agent(first_turn, done(True, "Counted."))
    run = finished(launch(acme, queue=METRICS_QUEUE, start_url=f"{site}/runtime_shop.html"))
    assert run.status == Run.Status.SUCCEEDED, f"{run.error_code}: {run.error_message}"

    web = scrape(web_url)
    finished_ok = {"status": "succeeded", "error_code": ""}
    assert web.value("pilothouse_runs_launched_total") == web_before.value("pilothouse_runs_launched_total") + 1
    assert web.value("pilothouse_runs_finished_total", **finished_ok) == (
        web_before.value("pilothouse_runs_finished_total", **finished_ok) + 1
    )
    assert web.value("pilothouse_runs_running") == 0
    requests = web.value("pilothouse_model_requests_total", model=model, **agent)
    assert requests == web_before.value("pilothouse_model_requests_total", model=model, **agent) + 2
    assert web.value("pilothouse_model_input_tokens_total", model=model, **agent) > web_before.value(
        "pilothouse_model_input_tokens_total", model=model, **agent
    )

    worker = wait_for(
        lambda: (scraped := scrape(worker_url)).value("pilothouse_browser_contexts_open") == 0 and scraped,
        message="the run's browser context to close",
    )
    assert during["contexts"] >= 1

    def grew(name: str, **labels: str) -> float:
        return worker.value(name, **labels) - worker_before.value(name, **labels)

    assert grew("pilothouse_run_queue_wait_seconds_count") == 1
    assert grew("pilothouse_step_duration_seconds_count") == 1  # the one browser action: the refused navigate
    assert grew("pilothouse_model_request_duration_seconds_count", model=model, outcome="ok", **agent) == 2
    assert grew("pilothouse_egress_refusals_total") >= 1
    # the worker's endpoint serves its own process, not the database's numbers (the web serves those)
    assert "pilothouse_runs_finished" not in worker.families


def test_the_worker_endpoint_wants_the_token(metrics_worker):
    assert fetch(metrics_worker.metrics_url, token=None)[0] == 401
    assert fetch(metrics_worker.metrics_url, token="not-the-metrics-token")[0] == 403
    assert fetch(metrics_worker.metrics_url.replace("/metrics", "/other"))[0] == 404


def test_a_worker_starts_one_endpoint_and_survives_a_taken_port(settings, monkeypatch):
    monkeypatch.setattr(metrics, "_endpoint", None)
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.WORKER_METRICS_ADDRESS = "127.0.0.1"
    settings.WORKER_METRICS_PORT = port = free_port()
    server = metrics.start_worker_endpoint()
    try:
        assert server is not None
        assert "pilothouse_step_duration_seconds" in scrape(f"http://127.0.0.1:{port}/metrics").families
        assert fetch(f"http://127.0.0.1:{port}/metrics", token="another")[0] == 403
        assert metrics.start_worker_endpoint() is server  # once per process
        monkeypatch.setattr(metrics, "_endpoint", None)
        assert metrics.start_worker_endpoint() is None  # the port is taken (by the first): logged, not fatal
    finally:
        server.shutdown()
        server.server_close()


def test_no_token_no_worker_endpoint(settings):
    settings.METRICS_TOKEN = ""
    settings.WORKER_METRICS_PORT = free_port()

    assert metrics.start_worker_endpoint() is None
