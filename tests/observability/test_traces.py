"""Runs exported as OpenTelemetry traces over OTLP/HTTP to a real receiver: the launch's web request, the worker's run
with its model requests and tool calls (GenAI attributes), and the judge, in one trace; no secret, task text or query
string in any attribute; and a collector that is down costs spans, never the run."""

from collections import Counter
from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync
from django.http import HttpResponse
from django.test import AsyncClient
from opentelemetry import trace

from agent_platform import telemetry
from agent_platform.models import ModelRequest
from runs.models import Run
from tests.support import demo
from tests.support.canaries import dumped
from tests.support.factories import make_run
from tests.support.judging import judgment_reply
from tests.support.launching import enqueue, events, finished, wait_for
from tests.support.otlp_receiver import ReceivedSpan, Receiver
from tests.support.replies import browser, done
from tests.support.sites import free_port
from tests.support.workers import WorkerProcess, worker_environment

# otlp_receiver is the session's, from conftest: the shared worker exports to that one receiver, so binding it here
# again would make a second receiver this module reads while the worker sends elsewhere.
demo_base_url = demo.demo_base_url
scripted_model = demo.scripted_model

SERVER, CLIENT = 2, 3  # the protobuf's SpanKind values
STATUS_ERROR = 2

SECRET = "otel-canary-secret-5f3a0c"
TASK_MARKER = "otel-canary-task-91c2"
QUERY_MARKER = "otel-canary-query-77e0"


@pytest.fixture
def traced_web(otlp_receiver: Receiver, monkeypatch) -> Iterator[Receiver]:
    """The test process (which serves the API's requests here) exports its spans to the receiver too, as a web
    process with OTEL_EXPORTER_OTLP_ENDPOINT set does."""
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    telemetry.shutdown()
    assert telemetry.configure(telemetry.WEB_SERVICE, endpoint=f"{otlp_receiver.endpoint}/v1/traces")
    yield otlp_receiver
    telemetry.shutdown()


def named(spans: list[ReceivedSpan], prefix: str) -> list[ReceivedSpan]:
    return [span for span in spans if span.name.startswith(prefix)]


def children(spans: list[ReceivedSpan], parent: ReceivedSpan, prefix: str = "") -> list[ReceivedSpan]:
    return [span for span in named(spans, prefix) if span.parent_id == parent.span_id]


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("celery_worker", "transactional_db")
def test_a_launch_its_run_and_its_judgment_are_one_trace_with_genai_spans(api, acme, site, messages_stub, traced_web):
    messages_stub.agent(browser("get_page_text"), done(True, "Two products."))
    messages_stub.judge(judgment_reply("pass", "The output lists the products on the page."))

    launched = api.post(
        "/runs", {"task": "List the products.", "start_url": f"{site}/runtime_shop.html", "judge": True}
    )
    assert launched.status_code == 201, launched.content
    run = finished(Run.objects.get(public_id=launched.json()["id"]))
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    # The judgment is a task of its own, queued behind whatever else the session's worker is doing: the trace is
    # read once it has ended, so a busy worker slows this test rather than failing it.
    wait_for(lambda: events(run, "run.judged"), timeout=90, message=f"run {run.public_id}'s judgment")

    run_span = traced_web.run_span(run.public_id)
    spans = traced_web.wait_for_trace(
        run_span.trace_id,
        lambda spans: named(spans, "judge") and len(named(spans, "chat ")) == 3 and named(spans, "POST "),
        "the launch, the run's two requests and the judge's in the trace",
    )

    # The web request is the trace's root, and the worker's run continues it.
    [launch] = named(spans, "POST ")
    assert (launch.name, launch.service, launch.parent_id, launch.kind) == (
        "POST /api/v1/runs",
        "pilothouse-web",
        "",
        SERVER,
    )
    assert launch.attributes == {
        "http.request.method": "POST",
        "http.route": "/api/v1/runs",
        "http.response.status_code": 201,
    }
    assert run_span.parent_id == launch.span_id and run_span.service == "pilothouse-worker"
    attributes = run_span.attributes
    assert attributes["pilothouse.run.status"] == "succeeded" and attributes["pilothouse.run.success"] is True
    assert "pilothouse.run.error_code" not in attributes
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.request.model"] == run.model
    assert attributes["pilothouse.workspace.id"] == acme.pk
    assert attributes["pilothouse.session.id"] == run.session.public_id
    assert attributes["pilothouse.run.requests"] >= 2 and "pilothouse.cost_usd" in attributes

    # One span per model request of the agent, under the run, with the conventions' usage attributes.
    requests = children(spans, run_span, "chat ")
    assert len(requests) == 2
    rows = ModelRequest.objects.filter(run=run, source="agent")
    assert Counter(
        (
            span.attributes["gen_ai.usage.input_tokens"],
            span.attributes["gen_ai.usage.output_tokens"],
            span.attributes["gen_ai.usage.cache_read.input_tokens"],
            span.attributes["gen_ai.usage.cache_creation.input_tokens"],
            span.attributes["pilothouse.cost_usd"],
        )
        for span in requests
    ) == Counter(
        (
            row.input_tokens + row.cache_read_input_tokens + row.cache_creation_input_tokens,
            row.output_tokens,
            row.cache_read_input_tokens,
            row.cache_creation_input_tokens,
            float(row.cost_usd),
        )
        for row in rows
    )
    for span in requests:
        assert span.kind == CLIENT and span.name == f"chat {run.model}"
        assert span.attributes["gen_ai.operation.name"] == "chat"
        assert span.attributes["gen_ai.provider.name"] == "anthropic"
        assert span.attributes["gen_ai.request.model"] == run.model
        assert span.attributes["gen_ai.response.finish_reasons"] == ["tool_use"]
        assert span.attributes["pilothouse.model_request.source"] == "agent"

    # One span per tool call, under the run.
    tools = children(spans, run_span, "execute_tool")
    assert [(span.name, span.attributes["gen_ai.tool.name"]) for span in tools] == [
        ("execute_tool get_page_text", "get_page_text"),
        ("execute_tool done", "done"),
    ]
    for span in tools:
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["pilothouse.tool.outcome"] == "ok"
        assert span.attributes["pilothouse.tool.refused"] is False
        assert span.attributes["gen_ai.tool.call.id"].startswith("toolu_")
    assert tools[0].attributes["pilothouse.tool.toolset"] == "browser"

    # The judgment the run's ending queued joins the run's trace, its request under it.
    [judge] = named(spans, "judge")
    assert judge.parent_id == run_span.span_id and judge.service == "pilothouse-worker"
    assert judge.attributes["pilothouse.judgment.verdict"] == "pass"
    [judge_request] = children(spans, judge, "chat ")
    assert judge_request.attributes["pilothouse.model_request.source"] == "judge"

    # Every span of the run is in this one trace.
    of_run = [span for span in traced_web.snapshot() if span.attributes.get("pilothouse.run.id") == run.public_id]
    assert {span.trace_id for span in of_run} == {run_span.trace_id}


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("celery_worker", "transactional_db")
def test_runs_enqueued_without_a_web_request_are_a_trace_each(acme, site, messages_stub, otlp_receiver):
    messages_stub.agent(browser("get_page_text"), done(True, "Read."), browser("get_page_text"), done(True, "Read."))
    first = finished(enqueue(make_run(acme, task="Read the page.", start_url=f"{site}/index.html"), queue="runs"))
    second = finished(enqueue(make_run(acme, task="Read the page.", start_url=f"{site}/index.html"), queue="runs"))

    spans = [otlp_receiver.run_span(run.public_id) for run in (first, second)]
    assert [span.parent_id for span in spans] == ["", ""], "each run's span is the root of its trace"
    assert spans[0].trace_id != spans[1].trace_id


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("celery_worker", "transactional_db")
def test_no_secret_task_text_or_query_string_reaches_an_attribute(api, site, messages_stub, traced_web):
    messages_stub.agent(browser("type", text="{{secret:SITE_TOKEN}}"), done(True, "Typed {{secret:SITE_TOKEN}}."))
    launched = api.post(
        "/runs",
        {
            "task": f"Type the site token ({TASK_MARKER}).",
            "start_url": f"{site}/state.html?ref={QUERY_MARKER}",
            "secrets": {"SITE_TOKEN": SECRET},
        },
    )
    assert launched.status_code == 201, launched.content
    run = finished(Run.objects.get(public_id=launched.json()["id"]))
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert messages_stub.requests[-1]["messages"], "the agent's second request went out"

    run_span = traced_web.run_span(run.public_id)
    traced_web.wait_for_trace(
        run_span.trace_id,
        lambda spans: len(named(spans, "execute_tool")) == 2 and len(named(spans, "chat ")) == 2,
        "the run's requests and tool calls",
    )
    exported = dumped([(span.service, span.name, span.attributes) for span in traced_web.snapshot()])
    for canary in (SECRET, TASK_MARKER, QUERY_MARKER):
        assert canary not in exported


DEAD_COLLECTOR_QUEUE = "dead-collector-tests"


@pytest.fixture
def dead_collector_worker(request, django_db_blocker, clean_broker, messages_stub_server, tmp_path) -> Iterator:
    """A worker whose collector is a closed port of loopback; its exports give up after a second."""
    with django_db_blocker.unblock():
        env = worker_environment(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
                "MEDIA_ROOT": str(tmp_path / "media"),
            }
        )
    worker = WorkerProcess(env, tmp_path / "worker.log", queues=DEAD_COLLECTOR_QUEUE).start()
    yield worker
    worker.stop()


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("transactional_db")
def test_a_dead_collector_loses_spans_not_runs(acme, site, messages_stub, dead_collector_worker):
    messages_stub.agent(browser("get_page_text"), done(True, "Read."))
    run = finished(
        enqueue(make_run(acme, task="Read the page.", start_url=f"{site}/index.html"), queue=DEAD_COLLECTOR_QUEUE)
    )

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert run.usage_requests == 2
    # The exporter did try, and failed, off the run's path.
    wait_for(
        lambda: "spans batch" in dead_collector_worker.log_path.read_text(errors="replace"),
        message="the exporter's failure in the worker's log",
    )


DEMO_QUEUE = "traced-demo-tests"


@pytest.fixture
def traced_demo_worker(
    django_db_blocker, clean_broker, otlp_receiver, demo_base_url, scripted_model, tmp_path
) -> Iterator[WorkerProcess]:
    """A worker as `make run` starts it without a key (the scripted demo model), exporting to the receiver."""
    with django_db_blocker.unblock():
        env = demo.demo_worker_environment(
            demo_base_url,
            scripted_model,
            tmp_path,
            {"OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"},
        )
    worker = WorkerProcess(env, tmp_path / "worker.log", queues=DEMO_QUEUE).start()
    yield worker
    worker.stop()


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("transactional_db")
def test_a_demo_runs_trace_reaches_the_receiver(acme, demo_base_url, otlp_receiver, traced_demo_worker):
    run = make_run(
        acme, task="List the products on the first page of the demo shop.", start_url=f"{demo_base_url}demo/"
    )
    run = finished(enqueue(run, queue=DEMO_QUEUE))
    assert run.status == Run.Status.SUCCEEDED, run.error_message

    run_span = otlp_receiver.run_span(run.public_id)
    spans = otlp_receiver.wait_for_trace(
        run_span.trace_id,
        lambda spans: len(named(spans, "chat ")) == run.usage_requests and named(spans, "execute_tool done"),
        "the demo run's requests and its done",
    )
    assert run_span.attributes["pilothouse.run.scripted"] is True
    assert run_span.attributes["pilothouse.run.status"] == "succeeded"
    requests = children(spans, run_span, "chat ")
    assert len(requests) == run.usage_requests > 0
    assert {(span.attributes["pilothouse.scripted"], span.attributes["pilothouse.cost_usd"]) for span in requests} == {
        (True, 0.0)
    }
    assert all(span.attributes["gen_ai.usage.output_tokens"] > 0 for span in requests)
    assert children(spans, run_span, "execute_tool")[-1].name == "execute_tool done"


def test_without_an_endpoint_nothing_is_traced(monkeypatch):
    for name in telemetry.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    telemetry.shutdown()

    assert telemetry.configure(telemetry.WEB_SERVICE) is False
    assert not telemetry.enabled()
    with telemetry.span("nothing") as span:
        assert not span.is_recording()


def test_a_failed_block_is_an_error_span_named_by_its_type_alone(traced_web):
    with pytest.raises(ValueError), telemetry.span("failing", {"pilothouse.run.id": "run_failing"}):
        raise ValueError(f"a message that may quote {SECRET}")

    [span] = wait_for(lambda: named(traced_web.snapshot(), "failing"), message="the failing span")
    assert span.status_code == STATUS_ERROR
    assert span.attributes == {"pilothouse.run.id": "run_failing", "error.type": "ValueError"}


@pytest.mark.usefixtures("transactional_db")
def test_under_asgi_the_launch_enqueues_its_run_within_the_requests_span(acme_key, traced_web, monkeypatch):
    """Django runs the (sync) view behind sync_to_async under ASGI: the request's span must still be current when the
    launch's commit sends the run's message, or the worker's run would start a trace of its own."""
    from runs import tasks

    sent_within: list[str] = []
    monkeypatch.setattr(
        tasks.execute_run,
        "delay",
        lambda pk, **_fair: sent_within.append(format(trace.get_current_span().get_span_context().trace_id, "032x")),
    )
    answer = async_to_sync(AsyncClient().post)(
        "/api/v1/runs",
        {"task": "List the products.", "start_url": "https://example.com/"},
        content_type="application/json",
        headers={"authorization": f"Bearer {acme_key}"},
    )
    assert answer.status_code == 201, answer.content

    assert len(sent_within) == 1
    [launch] = wait_for(lambda: traced_web.trace(sent_within[0]), message="the launch's span in the same trace")
    assert (launch.name, launch.parent_id) == ("POST /api/v1/runs", "")


def test_a_request_outside_any_route_is_named_by_its_method_and_a_server_error_marks_its_span(traced_web, rf):
    answer = telemetry.traced_request(lambda request: HttpResponse(status=500))(rf.get(f"/nowhere?ref={QUERY_MARKER}"))
    assert answer.status_code == 500

    [span] = wait_for(
        lambda: [span for span in traced_web.snapshot() if span.attributes.get("http.response.status_code") == 500],
        message="the request's span",
    )
    assert (span.name, span.kind, span.status_code) == ("GET", SERVER, STATUS_ERROR)
    assert span.attributes == {"http.request.method": "GET", "http.response.status_code": 500}


def test_the_service_name_variable_names_the_service(otlp_receiver, monkeypatch):
    monkeypatch.setenv("OTEL_SERVICE_NAME", "pilothouse-staging-web")
    telemetry.shutdown()
    try:
        assert telemetry.configure(telemetry.WEB_SERVICE, endpoint=f"{otlp_receiver.endpoint}/v1/traces")
        assert telemetry.configure(telemetry.WEB_SERVICE), "a second call keeps the first provider"
        with telemetry.span("named"):
            pass
    finally:
        telemetry.shutdown()  # sends what is queued

    [span] = [span for span in otlp_receiver.snapshot() if span.name == "named"]
    assert span.service == "pilothouse-staging-web"
