"""Take the README's screenshots from the real app: `make run`'s whole stack on a scratch data directory, the
bundled demo tasks (seeded on first start with the scripted model), and Chromium driven by Playwright.

    .venv/bin/python scripts/screenshots.py            # writes docs/img/{runs-list,launch-form,run-page,usage,schedules,recipe,...}.png
    .venv/bin/python scripts/screenshots.py batch-page # only docs/img/batch-page.png (a batch of the demo tasks)

REDIS_URL, BROWSER_EXECUTABLE and the rest are read from the environment as `make run` reads them.
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from playwright.sync_api import Page, ViewportSize, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "img"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]  # fmt: skip
VIEWPORT: ViewportSize = {"width": 1440, "height": 900}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def browser_executable() -> str:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
    sys.path.insert(0, str(REPO))
    return settings.BROWSER_EXECUTABLE


def start_platform(var_dir: Path, port: int, demo_port: int) -> tuple[subprocess.Popen, str]:
    """`scripts/run.py` on a scratch var dir and ports of its own; returns the process and the operator's password
    once it is up."""
    env = {**os.environ, "PILOTHOUSE_VAR_DIR": str(var_dir), "PORT": str(port), "DEMO_PORT": str(demo_port),
           "SCRIPTED_MODEL_PORT": str(free_port()), "PYTHONUNBUFFERED": "1"}  # fmt: skip
    env.pop("ANTHROPIC_API_KEY", None)
    env.pop("DATABASE_URL", None)  # a scratch SQLite database, never the operator's own
    log = (var_dir / "platform.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "scripts/run.py"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        text = (var_dir / "platform.log").read_text(errors="replace")
        if process.poll() is not None:
            raise SystemExit(f"the platform exited:\n{text[-3000:]}")
        if "Pilothouse is up" in text:
            password = re.search(r"password: (\S+)", text)
            if password is None:
                raise SystemExit("no operator password in the platform's output")
            return process, password.group(1)
        time.sleep(0.5)
    raise SystemExit("the platform did not come up in 180s")


def stop_platform(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def batch_page(page: Page, base: str, demo_base: str) -> None:
    """A batch of two demo tasks x two configurations (the second with too few turns to finish) x 3 runs."""
    from runs.presets import demo_tasks  # noqa: PLC0415 (the repo root joins sys.path in browser_executable)

    tasks = demo_tasks(demo_base)  # the demo site's own server, the only private address the agent may reach
    suite = [
        {"task": tasks[0]["task"], "start_url": tasks[0]["start_url"], "judge_context": tasks[0].get("judge_context")},
        {"task": tasks[2]["task"], "start_url": tasks[2]["start_url"]},
    ]
    lines = "\n".join(json.dumps({k: v for k, v in item.items() if v}) for item in suite)
    page.goto(f"{base}/batches/new/")
    page.fill("#id_name", "Demo shop, two turn budgets")
    page.set_input_files(
        "#id_suite", {"name": "suite.jsonl", "mimeType": "application/jsonl", "buffer": lines.encode()}
    )
    page.fill("#id_repeats", "3")
    page.locator("input[name=config_max_turns]").nth(1).fill("2")
    page.click("text=Launch batch")
    page.wait_for_selector("#batch-status")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and page.locator("#batch-status").inner_text() != "finished":
        time.sleep(3)
        page.reload()
    page.screenshot(path=str(OUT / "batch-page.png"), full_page=True)


def take(base: str, demo_base: str, password: str, only: set[str] | None = None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=browser_executable(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        try:
            shoot(page, base, demo_base, password, only)
        except BaseException:
            # Where it stopped, kept outside the repo's images, for whoever reads the error.
            failed = Path(tempfile.gettempdir()) / "pilothouse-screenshots-failed.png"
            page.screenshot(path=str(failed), full_page=True)
            print(f"stopped at {page.url}; the page as it was: {failed}", file=sys.stderr)
            raise
        finally:
            browser.close()


def shoot(page: Page, base: str, demo_base: str, password: str, only: set[str] | None) -> None:
    page.goto(f"{base}/login/")
    page.fill("#id_username", "operator")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    if only == {"batch-page"}:
        batch_page(page, base, demo_base)
        return

    # The seeded demo runs: wait until every one is finished and every judged one has its judgment.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        page.goto(f"{base}/")
        # (the seeded "ask me for a code" run waits for the operator: settled, as the runs list marks it)
        busy = page.locator(
            "#runs-body tr[data-status='queued'], #runs-body tr[data-status='running']:not(:has(.waiting-person))"
        ).count()
        pending = page.locator("#runs-body td .badge.v-none", has_text="judging").count()
        if page.locator("#runs-body tr[data-run-id]").count() and not busy and not pending:
            break
        time.sleep(2)
    # a row the list's socket re-read on opening flashes for a moment: the picture is of the list once it settled
    page.wait_for_function(
        "!document.getAnimations().some(a => a.animationName === 'flash' && a.playState === 'running')"
    )
    page.screenshot(path=str(OUT / "runs-list.png"))

    first = page.locator("#runs-body tr[data-run-id]").last.get_attribute("data-run-id")
    page.goto(f"{base}/runs/{first}/")
    page.wait_for_selector("#timeline [data-seq]")
    page.screenshot(path=str(OUT / "run-page.png"))

    # Replay of that run: the second step, its screenshot beside the agent's message and action.
    page.locator("#replay-open").click()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.getElementById('replay-img').complete")
    page.screenshot(path=str(OUT / "replay.png"))
    page.keyboard.press("Escape")

    page.goto(f"{base}/usage/")
    page.screenshot(path=str(OUT / "usage.png"))

    live_view(page, base)
    waiting_for_person(page, base)
    profiles(page, base)
    schedules(page, base, demo_base)
    recipe(page, base)

    page.goto(f"{base}/runs/new/")
    page.get_by_role("button", name=re.compile("graded against a rubric")).click()
    page.locator("#schema-lint").filter(has_text="accepted").wait_for()
    page.screenshot(path=str(OUT / "launch-form.png"))
    batch_page(page, base, demo_base)


def centre(page: Page, selector: str) -> None:
    page.locator(selector).evaluate("node => node.scrollIntoView({block: 'center'})")


def live_view(page: Page, base: str) -> None:
    """A demo run watched while it runs: the live picture of its tab (a demo run with the scripted model is quick, so
    a few are launched until one is caught with frames on screen)."""
    for _ in range(5):
        page.goto(f"{base}/runs/new/")
        page.get_by_role("button", name=re.compile("Demo shop")).first.click()
        page.get_by_role("button", name="Launch run").click()
        page.wait_for_url(re.compile(r".*/runs/run_[a-z0-9]+/$"))
        try:
            page.wait_for_function(
                "Number(document.getElementById('live-view').dataset.frames || 0) >= 2 && "
                "!document.getElementById('live-view').hidden",
                timeout=20000,
            )
        except PlaywrightTimeoutError:
            continue
        centre(page, "#live-view")  # below the fold at 1,440 x 900: the picture is what this image is of
        page.screenshot(path=str(OUT / "live-view.png"))
        return
    print("no live frame caught: live-view.png not taken", file=sys.stderr)


def waiting_for_person(page: Page, base: str) -> None:
    """The demo task that asks the operator for a code: its run page while it waits, then answered so it finishes."""
    page.goto(f"{base}/runs/new/")
    page.get_by_role("button", name=re.compile("ask me for a code")).first.click()
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(re.compile(r".*/runs/run_[a-z0-9]+/$"))
    page.locator("#question").wait_for(timeout=180_000)  # behind the live view's runs, on a busy machine
    centre(page, "#person")  # the question and its answer box
    page.screenshot(path=str(OUT / "waiting-for-person.png"))
    page.fill("#answer-text", "4821-7730")
    page.locator("#answer-form button").click()


def profiles(page: Page, base: str) -> None:
    """The Profiles page once the seeded sign-in demo run saved the demo profile."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        page.goto(f"{base}/profiles/")
        if page.locator("#profiles-table .profile-domains .mono").count():
            break
        time.sleep(2)
    page.screenshot(path=str(OUT / "profiles.png"))


def recipe(page: Page, base: str) -> None:
    """A recipe made from a demo contact-form run (its name and email as parameters), replayed once with another name
    typed into its fields: its steps, parameters, version and the run made from it."""
    page.goto(f"{base}/runs/new/")
    page.get_by_role("button", name=re.compile("Demo shop: contact form")).first.click()
    page.get_by_role("button", name="Launch run").click()
    page.wait_for_url(re.compile(r".*/runs/run_[a-z0-9]+/$"))
    run_page = page.url
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not page.locator("#make-recipe").count():
        time.sleep(2)
        page.goto(run_page)
    page.locator("#make-recipe summary").click()
    page.fill("#id_recipe_name", "Ask the shop how to return an item")
    page.fill("#id_recipe_parameters", "customer_name = Ada Lovelace\ncustomer_email = ada@example.com")
    page.locator("#make-recipe-form button").click()
    page.wait_for_url(re.compile(r".*/recipes/rcp_[a-z0-9]+/$"))
    recipe_page = page.url
    page.fill("#param-customer_name", "Grace Hopper")
    page.fill("#param-customer_email", "grace@example.com")
    page.locator("#recipe-replay").click()  # Replay now sends the fields as they are, unsaved
    page.wait_for_url(lambda url: url != recipe_page)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        page.goto(recipe_page)
        if page.locator("#recipe-runs .badge.st-succeeded, #recipe-runs .badge.st-failed").count():
            break
        time.sleep(2)
    page.screenshot(path=str(OUT / "recipe.png"), full_page=True)


def schedules(page: Page, base: str, demo_base: str) -> None:
    """The Schedules page with a schedule of the demo shop's task every minute, once its first firing's run ended (its
    verdict in the history beside the next firings)."""
    page.goto(f"{base}/schedules/")
    page.fill("#id_name", "Shop prices every minute")
    page.fill("#id_cron", "* * * * *")
    page.fill("#id_task", "List the products on the first page of the demo shop with their prices.")
    page.fill("#id_start_url", f"{demo_base}/demo/shop/")
    page.get_by_role("button", name="Add schedule").click()
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        page.goto(f"{base}/schedules/")
        if page.locator("table.history .badge.st-succeeded, table.history .badge.st-failed").count():
            break
        time.sleep(3)
    page.screenshot(path=str(OUT / "schedules.png"), full_page=True)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pilothouse-screens-") as scratch:
        port, demo_port = free_port(), free_port()
        process, password = start_platform(Path(scratch), port, demo_port)
        try:
            take(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{demo_port}", password, set(sys.argv[1:]) or None)
        except BaseException:
            # The scratch directory goes with this function: what the platform said is the only trace of why.
            log = (Path(scratch) / "platform.log").read_text(errors="replace").replace(password, "********")
            print(f"the platform's last output:\n{log[-4000:]}", file=sys.stderr)
            raise
        finally:
            stop_platform(process)
    print(f"screenshots written to {OUT.relative_to(REPO)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
