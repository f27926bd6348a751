"""The web's /metrics: the bearer token, the database's numbers (cached for the installation), the web process's own
live viewers, the settings checks, and the Grafana dashboard naming only metrics that are exported."""

import json
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.core.cache import cache
from django.utils import timezone
from prometheus_client import REGISTRY

from agent_platform import metrics
from agent_platform.checks import check_metrics
from agent_platform.models import ModelRequest
from runs.models import Run
from runs.routing import websocket_urlpatterns
from tests.support.factories import make_run
from tests.support.metrics import METRICS_TOKEN, Scrape, fetch, scrape
from tests.support.paths import REPO
from webhooks.models import Delivery, Endpoint


@pytest.fixture
def metrics_url(live_server, settings) -> str:
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_CACHE_SECONDS = 0
    return f"{live_server.url}/metrics"


@pytest.mark.django_db(transaction=True)
def test_metrics_are_off_without_a_token_configured(live_server, settings):
    settings.METRICS_TOKEN = ""

    status, _, _ = fetch(f"{live_server.url}/metrics")

    assert status == 404


@pytest.mark.django_db(transaction=True)
def test_a_scrape_without_a_bearer_token_is_refused_401(metrics_url):
    status, body, headers = fetch(metrics_url, token=None)

    assert status == 401
    assert headers["WWW-Authenticate"] == "Bearer"
    assert "pilothouse_" not in body


@pytest.mark.django_db(transaction=True)
def test_a_scrape_with_another_token_is_refused_403(metrics_url):
    status, body, _ = fetch(metrics_url, token="not-the-metrics-token")

    assert status == 403
    assert "pilothouse_" not in body


@pytest.mark.django_db(transaction=True)
def test_an_api_key_is_not_the_metrics_token(metrics_url, acme_key):
    status, _, _ = fetch(metrics_url, token=acme_key)

    assert status == 403


@pytest.mark.django_db(transaction=True)
def test_the_database_numbers_count_runs_by_status_and_error_code(metrics_url, acme):
    make_run(acme)
    make_run(acme, status=Run.Status.RUNNING)
    make_run(acme, status=Run.Status.SUCCEEDED, success=True)
    make_run(acme, status=Run.Status.FAILED, error_code=Run.ErrorCode.AGENT_LIMIT)
    make_run(acme, status=Run.Status.FAILED, error_code=Run.ErrorCode.AGENT_LIMIT)

    scraped = scrape(metrics_url)

    assert scraped.value("pilothouse_runs_launched_total") == 5
    assert scraped.value("pilothouse_runs_queued") == 1
    assert scraped.value("pilothouse_runs_running") == 1
    assert scraped.value("pilothouse_runs_finished_total", status="succeeded", error_code="") == 1
    assert scraped.value("pilothouse_runs_finished_total", status="failed", error_code="agent_limit") == 2


@pytest.mark.django_db(transaction=True)
def test_webhook_deliveries_are_counted_by_outcome(metrics_url, acme):
    endpoint = Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/in", events=["run.finished"])
    for status in (Delivery.Status.DELIVERED, Delivery.Status.DELIVERED, Delivery.Status.FAILED, "pending"):
        Delivery.objects.create(endpoint=endpoint, event_type="run.finished", body="{}", status=status)

    scraped = scrape(metrics_url)

    assert scraped.value("pilothouse_webhook_deliveries_total", outcome="delivered") == 2
    assert scraped.value("pilothouse_webhook_deliveries_total", outcome="failed") == 1
    assert scraped.value("pilothouse_webhook_deliveries_pending") == 1


def request_row(workspace, *, age: timedelta, model: str = "claude-sonnet-5-5", source: str = "agent") -> ModelRequest:
    return ModelRequest.objects.create(
        workspace=workspace,
        source=source,
        model=model,
        input_tokens=1000,
        output_tokens=100,
        cache_read_input_tokens=10,
        cache_creation_input_tokens=1,
        cost_usd=Decimal("0.25"),
        created_at=timezone.now() - age,
    )


@pytest.mark.django_db(transaction=True)
def test_model_requests_are_summed_by_model_and_source_from_kept_totals(metrics_url, acme):
    cache.delete(metrics.SETTLED_KEY)
    settled = request_row(acme, age=timedelta(hours=1))
    request_row(acme, age=timedelta(0))
    request_row(acme, age=timedelta(0), source="judge", model="claude-haiku-5-5")
    agent = {"model": "claude-sonnet-5-5", "source": "agent"}

    first = scrape(metrics_url)
    settled.delete()  # a kept row stays counted: the counter never goes down
    request_row(acme, age=timedelta(seconds=1))
    second = scrape(metrics_url)
    cache.delete(metrics.SETTLED_KEY)
    recomputed = scrape(metrics_url)

    assert first.value("pilothouse_model_requests_total", **agent) == 2
    assert first.value("pilothouse_model_cost_usd_total", **agent) == 0.5
    assert first.value("pilothouse_model_input_tokens_total", **agent) == 2000
    assert first.value("pilothouse_model_output_tokens_total", **agent) == 200
    assert first.value("pilothouse_model_cache_read_tokens_total", **agent) == 20
    assert first.value("pilothouse_model_cache_write_tokens_total", **agent) == 2
    assert first.value("pilothouse_model_requests_total", model="claude-haiku-5-5", source="judge") == 1
    assert second.value("pilothouse_model_requests_total", **agent) == 3
    assert recomputed.value("pilothouse_model_requests_total", **agent) == 2
    cache.delete(metrics.SETTLED_KEY)


@pytest.mark.django_db(transaction=True)
def test_no_label_carries_a_task_url_or_id(metrics_url, acme):
    run = make_run(acme, task="Sign in with hunter2 at https://secret.example.com/", start_url="https://x.example.com/")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FAILED, error_code=Run.ErrorCode.TASK_FAILED)

    _, body, _ = fetch(metrics_url)

    assert "hunter2" not in body and "example.com" not in body and run.public_id not in body
    labels = {name for family in Scrape(body).families.values() for s in family.samples for name in s.labels}
    assert labels <= {"model", "source", "status", "error_code", "outcome"} | metrics_only_python_labels()


def metrics_only_python_labels() -> set[str]:
    """The labels of prometheus_client's own process and Python families (version, implementation...)."""
    return {"implementation", "major", "minor", "patchlevel", "version", "generation", "le"}


@pytest.mark.django_db(transaction=True)
def test_the_database_numbers_are_cached_for_the_installation(metrics_url, settings, acme):
    settings.METRICS_CACHE_SECONDS = 60
    cache.delete(metrics.CACHE_KEY)
    make_run(acme)
    first = scrape(metrics_url).value("pilothouse_runs_launched_total")

    make_run(acme)
    cached = scrape(metrics_url).value("pilothouse_runs_launched_total")
    cache.delete(metrics.CACHE_KEY)
    fresh = scrape(metrics_url).value("pilothouse_runs_launched_total")

    assert (first, cached, fresh) == (1, 1, 2)
    cache.delete(metrics.CACHE_KEY)


@pytest.mark.django_db
def test_a_scrape_answers_from_the_database_when_redis_is_away(client, settings, acme):
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_CACHE_SECONDS = 60
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",  # nothing listens there
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
    make_run(acme)

    response = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})

    assert response.status_code == 200
    assert Scrape(response.content.decode()).value("pilothouse_runs_launched_total") == 1


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_live_viewers_count_the_open_live_view_sockets(alice, acme):
    run = await database_sync_to_async(make_run)(acme, status=Run.Status.RUNNING)
    before = REGISTRY.get_sample_value("pilothouse_live_viewers")
    socket = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/runs/{run.public_id}/live/")
    socket.scope["user"] = alice

    connected, _ = await socket.connect()
    assert connected
    assert (await socket.receive_json_from(timeout=5))["type"] == "watching"
    watching = REGISTRY.get_sample_value("pilothouse_live_viewers")
    await socket.disconnect()

    assert watching == before + 1
    assert REGISTRY.get_sample_value("pilothouse_live_viewers") == before


def test_a_short_metrics_token_is_a_warning(settings):
    settings.METRICS_TOKEN = "short"

    assert [problem.id for problem in check_metrics()] == ["pilothouse.W030"]


def test_a_worker_port_without_a_token_is_a_warning(settings):
    settings.METRICS_TOKEN = ""
    settings.WORKER_METRICS_PORT = 9101

    assert [problem.id for problem in check_metrics()] == ["pilothouse.W031"]


def test_a_long_token_and_a_worker_port_pass(settings):
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.WORKER_METRICS_PORT = 9101

    assert check_metrics() == []


def exported_series(scraped: Scrape) -> set[str]:
    """The series names a query may use: a counter's _total, a histogram's _bucket, _count and _sum, a gauge's name."""
    suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"], "gauge": [""]}
    return {f"{name}{suffix}" for name, family in scraped.families.items() for suffix in suffixes.get(family.type, [])}


@pytest.mark.django_db(transaction=True)
def test_every_dashboard_query_names_an_exported_metric(metrics_url):
    # The test process defines every metric a worker does (agent_platform.metrics), so one scrape names them all.
    exported = exported_series(scrape(metrics_url))
    dashboard = json.loads((REPO / "docs" / "grafana-dashboard.json").read_text())

    panels = [panel for panel in dashboard["panels"] if panel["type"] != "row"]
    expressions = [target["expr"] for panel in panels for target in panel["targets"]]
    named = {name for expr in expressions for name in re.findall(r"\bpilothouse_[a-z_]+", expr)}

    assert dashboard["title"] and dashboard["uid"] and dashboard["schemaVersion"]
    assert all(panel["title"] and panel["gridPos"] and panel["targets"] for panel in panels)
    assert named and named <= exported, f"not exported: {sorted(named - exported)}"
    assert named >= {"pilothouse_runs_finished_total", "pilothouse_step_duration_seconds_bucket"}
