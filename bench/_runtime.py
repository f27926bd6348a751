"""Runs the real agent runtime in the benchmark process against a scripted Messages stub and the fixture pages.

The stub is `scripted_api.wire.WireServer` in a subprocess of its own (so its JSON parsing and cache simulation do
not share this process's GIL with the loop being measured). Its script is stateless: the reply to a request depends
only on how many assistant turns the request already holds, so one stub serves any number of concurrent runs.

    python bench/_runtime.py stub --site URL --turns 20 [--usage]   # prints the port, serves until killed
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runs.models import Run

BENCH = Path(__file__).resolve().parent
FIXTURES = BENCH / "fixtures"
WORKSPACE_SLUG = "bench-runtime"

# One agent turn each, cycling: the members an agent uses most, on the fixture pages (no clicks: a click could leave
# the fixture site for a 404 and change what later turns read).
ACTIONS: list[tuple[str, dict[str, Any]]] = [
    ("read_page", {}),
    ("find", {"query": "add to basket button"}),
    ("scroll", {"coordinate": [640, 400], "scroll_direction": "down", "scroll_amount": 5}),
    ("navigate", {"url": "{site}/news_article.html"}),
    ("read_page", {"filter": "interactive"}),
    ("get_page_text", {}),
    ("navigate", {"url": "{site}/search_results.html"}),
    ("read_page", {}),
    ("navigate", {"url": "{site}/product_listing.html"}),
]


def scripted_reply(request: dict[str, Any], site: str, turns: int, with_usage: bool) -> dict[str, Any]:
    """The reply to `request`: browser actions until the last turn, then done."""
    from scripted_api.wire import tool_use_reply

    turn = 1 + sum(1 for message in request.get("messages", []) if message.get("role") == "assistant")
    usage = {"input_tokens": 1, "output_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    extra: dict[str, Any] = {"usage": usage} if with_usage else {}
    if request.get("tool_choice", {}).get("type") == "tool" or turn >= turns:
        return tool_use_reply("done", {"success": True, "output": f"Finished after {turn} turns."}, **extra)
    name, member_input = ACTIONS[(turn - 1) % len(ACTIONS)]
    member_input = {k: (v.format(site=site) if isinstance(v, str) else v) for k, v in member_input.items()}
    if turn == 1 and name != "navigate":
        return tool_use_reply(name, member_input, toolset_name="browser", text="Let me look at the page.", **extra)
    return tool_use_reply(name, member_input, toolset_name="browser", **extra)


def serve_stub(site: str, turns: int, with_usage: bool, min_cacheable: int) -> None:
    from scripted_api.wire import PromptCache, WireServer

    server = WireServer(
        lambda request: scripted_reply(request, site, turns, with_usage),
        prompt_cache=PromptCache(min_cacheable_tokens=min_cacheable),
    ).start()
    print(server.base_url.rsplit(":", 1)[1], flush=True)
    threading.Event().wait()


@contextmanager
def stub_process(site: str, turns: int, *, with_usage: bool, min_cacheable: int = 1024) -> Iterator[str]:
    """The scripted stub in a subprocess; yields its base URL."""
    args = [sys.executable, str(Path(__file__)), "stub", "--site", site, "--turns", str(turns)]
    args += ["--min-cacheable", str(min_cacheable)] + (["--usage"] if with_usage else [])
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=BENCH.parent)
    try:
        assert process.stdout is not None  # stdout=PIPE
        port = process.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError("the Messages stub did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def fixture_site() -> Iterator[str]:
    from _common import serve

    with serve(FIXTURES) as site:
        yield site


def configure(base_url: str) -> None:
    """Point the runtime at the stub, keep screenshots out of var/, and set up Django."""
    os.environ["ANTHROPIC_BASE_URL"] = base_url
    os.environ["ANTHROPIC_API_KEY"] = "bench-key"
    os.environ.setdefault("MODEL_MAX_RETRIES", "0")
    os.environ.setdefault("MEDIA_ROOT", tempfile.mkdtemp(prefix="pilothouse-bench-media-"))
    os.environ.setdefault("BROWSER_ALLOWED_PRIVATE_HOSTS", "127.0.0.1")
    from _common import setup_django

    setup_django()
    # a line per HTTP request and per run would bury the progress bar and the tables
    logging.disable(logging.INFO)


def new_run(site: str, max_turns: int = 50, task: str | None = None) -> Run:
    """A queued run in the bench-runtime workspace, starting on the product listing."""
    from agent_platform.models import Workspace
    from runs.models import Run, Session

    workspace, _ = Workspace.objects.get_or_create(slug=WORKSPACE_SLUG, defaults={"name": "Bench runtime"})
    session = Session.objects.create(workspace=workspace)
    return Run.objects.create(
        workspace=workspace,
        session=session,
        task=task or "Find the cheapest casserole on the shop and report its price.",
        start_url=f"{site}/product_listing.html",
        model="claude-sonnet-4-6",
        max_turns=max_turns,
    )


def execute(run: Run) -> None:
    """Run one run's loop to its end in this thread, as a Celery worker thread would."""
    from runtime.worker import execute_run

    execute_run(run.pk, worker="bench@local")


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    stub = sub.add_parser("stub")
    stub.add_argument("--site", required=True)
    stub.add_argument("--turns", type=int, default=20)
    stub.add_argument("--usage", action="store_true", help="fixed usage in replies: skip the cache simulation")
    stub.add_argument("--min-cacheable", type=int, default=1024)
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH.parent))
    serve_stub(args.site, args.turns, args.usage, args.min_cacheable)


if __name__ == "__main__":
    main()
