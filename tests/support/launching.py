"""What the runtime tests share: a real Celery worker on a queue of its own, the test pages, and run helpers."""

from typing import Any

import pytest

from runs.models import Event, Run
from runs.scripted.wire import tool_use_reply
from tests.conftest import WorkerProcess, wait_for, worker_environment
from tests.factories import make_run

# The runtime tests' runs go to a queue only their worker consumes, so no other test's worker (with another
# environment) can take them.
QUEUE = "runtime-tests"
RUN_TIMEOUT = 60


_shared: dict[str, Any] = {}


@pytest.fixture(scope="session")
def runtime_worker(
    request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory
) -> WorkerProcess:
    """One worker for every runtime test module, pointed at the Messages stub; retries kept few and fast."""
    if "worker" not in _shared:
        media = tmp_path_factory.mktemp("runtime-media")
        with django_db_blocker.unblock():
            env = worker_environment({"MODEL_MAX_RETRIES": "2", "MEDIA_ROOT": str(media)})
        worker = WorkerProcess(env, tmp_path_factory.mktemp("runtime-worker") / "worker.log", queues=QUEUE).start()
        worker.media_root = media
        _shared["worker"] = worker
        request.addfinalizer(_stop_worker)
    return _shared["worker"]


def _stop_worker(name: str = "worker") -> None:
    worker = _shared.pop(name, None)
    if worker is not None:
        worker.stop()


SHORT_LIMIT_QUEUE = "runtime-tests-short-limit"
SHORT_LIMIT_SECONDS = 10  # the setting's minimum


@pytest.fixture(scope="session")
def short_limit_worker(
    request, django_db_setup, django_db_blocker, clean_broker, messages_stub_server, tmp_path_factory
) -> WorkerProcess:
    """A second worker whose runs have the shortest wall-clock limit, and which labels its runs scripted."""
    if "short" not in _shared:
        with django_db_blocker.unblock():
            env = worker_environment(
                {
                    "RUN_TIME_LIMIT_SECONDS": str(SHORT_LIMIT_SECONDS),
                    "SCRIPTED_MODEL": "true",
                    "MEDIA_ROOT": str(tmp_path_factory.mktemp("runtime-media-short")),
                }
            )
        log_path = tmp_path_factory.mktemp("runtime-worker-short") / "worker.log"
        _shared["short"] = WorkerProcess(env, log_path, queues=SHORT_LIMIT_QUEUE).start()
        request.addfinalizer(lambda: _stop_worker("short"))
    return _shared["short"]


def enqueue(run: Run, queue: str = QUEUE) -> Run:
    """Hand a committed run to the runtime tests' worker."""
    from runs.tasks import execute_run

    execute_run.apply_async(args=[run.pk], queue=queue)
    return run


def launch(workspace, **fields) -> Run:
    return enqueue(make_run(workspace, **fields))


def finished(run: Run, timeout: float = RUN_TIMEOUT) -> Run:
    def ended() -> Run | None:
        run.refresh_from_db()
        return run if run.is_finished else None

    return wait_for(ended, timeout=timeout, message=f"run {run.public_id} to finish")


def events(run: Run, type: str | None = None) -> list[Event]:
    queryset = Event.objects.filter(run=run).order_by("seq")
    return list(queryset.filter(type=type) if type else queryset)


def browser(name: str, *, thinking: str | None = None, **member_input: Any) -> dict:
    """A reply calling one browser member, after a thinking block (signed by the stub) when `thinking` is given."""
    return tool_use_reply(name, member_input, toolset_name="browser", thinking=thinking)


def done(success: bool = True, output: str = "Finished.", *, thinking: str | None = None, **extra: Any) -> dict:
    return tool_use_reply("done", {"success": success, "output": output, **extra}, thinking=thinking)


def last_tool_result_text(request: dict) -> str:
    """The text of the last tool_result in a request's last user message (where the runtime puts its notices)."""
    content = request["messages"][-1]["content"]
    results = [block for block in content if block.get("type") == "tool_result"]
    blocks = results[-1]["content"] if results else []
    return "\n".join(block.get("text", "") for block in blocks if block.get("type") == "text")
