"""A recipe's replay against the run it was made from, for the demo tasks: model requests, tokens, cost and wall time.

Each demo task runs once with the scripted demo model (the agent), is made a recipe, and is replayed: the real
runtime in this process (as a worker thread runs it), the demo site's own server and the scripted model's server in
threads, PostgreSQL and Redis as configured. The replay's steps are Playwright alone; its data is one extraction
request, or none when its last page's text is the source run's.

The scripted model answers in about a millisecond, so a source run's wall time here is nearly all browser. With
`--model-seconds S` every model reply (the agent's and the extraction's) waits S seconds first, as a real model takes
seconds to answer: an assumption, stated beside the numbers, not a measurement of the API.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/recipe_replay.py [--replays 3] [--model-seconds 2]
"""

from __future__ import annotations

import argparse
import os
import socketserver
import statistics
import threading
import time
import wsgiref.simple_server
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import _runtime
from _common import header, progress, table

if TYPE_CHECKING:
    from runs.models import Run

# The demo tasks a recipe replays (the presets' labels); upload and the profile tasks need files or a saved profile.
TASKS = {
    "Demo shop: list first-page products (judged)": "products",
    "Demo shop: contact form": "contact form",
    "Demo shop: download the invoice (judged)": "invoice",
    "Demo shop: sign in, save to a profile": "sign in (secrets)",
}


class ThreadingWSGIServer(socketserver.ThreadingMixIn, wsgiref.simple_server.WSGIServer):
    daemon_threads = True


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class DemoSite:
    """The demo site's own server (its URLs only) on an ephemeral port, listening at once and answering once
    `serve()` gave it the application: Django's settings must be read after the model's address is known."""

    def __init__(self) -> None:
        self.application: Any = None
        self.server = wsgiref.simple_server.make_server(
            "127.0.0.1", 0, self.answer, server_class=ThreadingWSGIServer, handler_class=QuietHandler
        )
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"

    def answer(self, environ: dict[str, Any], start_response: Any) -> Any:
        return self.application(environ, start_response)

    def serve(self) -> None:
        from demo_site import server

        self.application = server.wsgi_application()
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@contextmanager
def demo_site() -> Iterator[DemoSite]:
    site = DemoSite()
    try:
        yield site
    finally:
        site.server.shutdown()
        site.server.server_close()


def queued_run(workspace: Any, task: str, start_url: str, schema: Any, secrets: dict[str, str] | None) -> Run:
    from django.conf import settings
    from django.utils import timezone

    from runs.models import Run, Session
    from runs.secret_box import seal

    session = Session.objects.create(workspace=workspace, output_schema=schema)
    return Run.objects.create(
        workspace=workspace,
        session=session,
        task=task,
        start_url=start_url,
        model=settings.DEFAULT_MODEL,
        max_turns=30,
        secrets=seal(secrets or {}),
        admitted_at=timezone.now(),
    )


def timed(run: Run) -> tuple[Run, float]:
    started = time.perf_counter()
    _runtime.execute(run)
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    return run, seconds


def usage(run: Run, seconds: float) -> dict[str, Any]:
    from agent_platform.models import ModelRequest

    sources = list(ModelRequest.objects.filter(run=run).values_list("source", flat=True))
    return {
        "agent": sources.count("agent"),
        "extraction": sources.count("extraction"),
        "tokens": run.usage_total,
        "cost": run.cost_usd,
        "seconds": seconds,
        "status": run.status,
    }


def typed_name(source: Run) -> dict[str, str]:
    """The contact form's name as the source run typed it, marked as the parameter `name`."""
    from runs.models import Event
    from runs.recipes.steps import steps_of

    steps = steps_of(Event.objects.filter(run=source).order_by("seq"))
    value = next(str(step["value"]) for step in steps if (step.get("target") or {}).get("name") == "Your name")
    return {"name": value}


class Paced:
    """The scripted model, answering each request after `seconds` (0: at once)."""

    def __init__(self, model: Any, seconds: float) -> None:
        self.model, self.seconds = model, seconds

    def __call__(self, request: dict[str, Any]) -> Any:
        time.sleep(self.seconds)
        return self.model(request)


def measure(
    preset: dict[str, Any], workspace: Any, replays: int, *, another_name: bool = False
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The source run's usage, and each replay's (with its replayed steps and where it healed). With
    `another_name`, the contact form's name is a parameter and each replay types another one, so its last page
    differs from the source run's and its data takes the extraction request."""
    from runs.recipes import services
    from runs.recipes.models import Replay
    from runs.recipes.steps import render

    secrets = preset.get("secrets")
    source, seconds = timed(
        queued_run(workspace, preset["task"], preset["start_url"], preset.get("output_schema"), secrets)
    )
    if source.status != "succeeded":
        raise RuntimeError(f"{preset['label']}: the source run ended {source.status}: {source.error_message}")
    recipe = services.make_recipe(source, parameters=typed_name(source) if another_name else None)
    version = recipe.current()
    parameters = {"name": "Grace Hopper"} if another_name else {}
    measured = []
    for _ in range(replays):
        task = render(recipe.task, parameters)
        run = queued_run(workspace, task, recipe.start_url, recipe.output_schema, secrets)
        Replay.objects.create(run=run, recipe=recipe, version=version, parameters=parameters)
        run, replay_seconds = timed(run)
        replay = Replay.objects.get(run=run)
        measured.append(
            usage(run, replay_seconds) | {"steps": replay.replayed_steps, "healed": replay.healed_from_step}
        )
    return usage(source, seconds) | {"steps": len(version.steps)}, measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replays", type=int, default=3, help="replays of each recipe (their median is shown)")
    parser.add_argument(
        "--model-seconds", type=float, default=0.0, help="seconds each model reply waits first (a real model's time)"
    )
    args = parser.parse_args()

    os.environ["BROWSER_ALLOWED_PRIVATE_HOSTS"] = "127.0.0.1"  # the demo site's ephemeral port
    from scripted_api.demo import ScriptedDemoModel
    from scripted_api.wire import WireServer

    with demo_site() as demo:
        site = demo.url
        model = WireServer(Paced(ScriptedDemoModel(site), args.model_seconds)).start()
        try:
            _runtime.configure(model.base_url)  # before Django reads its settings: the model's address
            demo.serve()
            from agent_platform.models import Workspace
            from runs.presets import demo_tasks

            workspace, _ = Workspace.objects.get_or_create(slug="bench-recipes", defaults={"name": "Bench recipes"})
            presets = [preset for preset in demo_tasks(site) if preset["label"] in TASKS]
            contact = next(preset for preset in presets if TASKS[preset["label"]] == "contact form")
            scenarios = [(TASKS[preset["label"]], preset, False) for preset in presets]
            scenarios.append(("contact form, another name", contact, True))
            paced = f", each model reply after {args.model_seconds:g} s" if args.model_seconds else ""
            print(header(f"Recipe replay against its source run (demo tasks, scripted model{paced})"))
            rows = []
            for label, preset, another_name in progress(scenarios, len(scenarios), "tasks"):
                source, replays = measure(preset, workspace, args.replays, another_name=another_name)
                replay = replays[len(replays) // 2]
                seconds = statistics.median(r["seconds"] for r in replays)
                cost = statistics.median(r["cost"] for r in replays)
                saved = (Decimal(1) - cost / source["cost"]) * 100 if source["cost"] else Decimal(0)
                rows.append(
                    [
                        label,
                        source["steps"],
                        f"{source['agent']} / {replay['agent']}",
                        f"{source['extraction']} / {replay['extraction']}",
                        f"{source['tokens']:,} / {replay['tokens']:,}",
                        f"{source['cost']:.6f} / {cost:.6f}",
                        f"{saved:.1f}%",
                        f"{source['seconds']:.2f} / {seconds:.2f}",
                        f"{replay['tokens'] / source['tokens']:.1%}" if source["tokens"] else "n/a",
                        f"{seconds / source['seconds']:.2f}x",
                        "none" if all(r["healed"] is None for r in replays) else "yes",
                    ]
                )
            print(
                table(
                    [
                        "task",
                        "steps",
                        "agent requests (run / replay)",
                        "extraction",
                        "tokens",
                        "cost $",
                        "cost saved",
                        "wall s",
                        "replay tokens (target <= 5%)",
                        "replay time (target < 0.33x)",
                        "healed",
                    ],
                    rows,
                )
            )
        finally:
            model.stop()


if __name__ == "__main__":
    main()
