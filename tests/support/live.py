"""The operator's live viewer for real: Daphne serving the ASGI application on the test database, Chromium through
Playwright's sync API, a page signed in as an operator, and events emitted from outside Playwright's thread."""

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from playwright.sync_api import expect, sync_playwright

from runs.events import emit as emit_here
from runs.models import Run
from tests.support.paths import REPO
from tests.support.sites import free_port
from tests.support.workers import worker_environment

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]  # fmt: skip


def emit(run: Run, type: str, data: dict):
    """Emit from another thread: this one holds Playwright's event loop, where the live push cannot run."""

    def in_thread():
        try:
            return emit_here(run, type, data)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(in_thread).result()


@contextmanager
def daphne(tmp_path_factory, env: dict[str, str]) -> Iterator[str]:
    """Daphne serving the real ASGI application (HTTP and websockets) in `env` (workers.worker_environment's); yields
    its base URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("daphne") / "daphne.log"
    log = open(log_path, "ab")  # noqa: SIM115  (kept open for the process's lifetime)
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        # Generous: on a loaded machine Django's start-up alone can take half a minute; a server that never listens
        # is an error here, not a connection refused in the first test that calls it.
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"daphne exited:\n{log_path.read_text()[-3000:]}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"daphne did not listen within 120 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


# The session's one web server. Each test module that uses it binds the fixture under its own name
# (`asgi_server = live.asgi_server`), which makes a fixture of its own to pytest: without this, each module would
# start a Daphne of its own and keep it, with its pooled connections, to the session's end.
_web_server: dict[str, str] = {}


@pytest.fixture(scope="session")
def asgi_server(request, django_db_setup, django_db_blocker, tmp_path_factory) -> str:
    """The suite's web server: a web process as `make run` starts one, with the default pool (DB_POOL_MAX); started on
    first use, stopped at the session's end."""
    if "url" not in _web_server:
        with django_db_blocker.unblock():
            env = worker_environment()
        running = ExitStack()
        _web_server["url"] = running.enter_context(daphne(tmp_path_factory, env))

        def stop() -> None:
            _web_server.clear()
            running.close()

        request.addfinalizer(stop)
    return _web_server["url"]


# How long `expect(...)` waits for the page to get there. Playwright's 5 s suits a quiet laptop; CI runs both suites
# at once on a loaded machine, where a live push and the re-render it asks for can take longer. A page that never gets
# there still fails, later.
EXPECT_TIMEOUT_MS = 20_000


@pytest.fixture
def chromium():
    # Per test: Playwright's sync API keeps an event loop marked running in this thread while it is open, which
    # would break every async test that runs after it.
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=settings.BROWSER_EXECUTABLE, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def signed_in_page(chromium, asgi_server: str, user):
    """A browser page signed in as `user` through a real session cookie."""
    client = Client()
    client.force_login(user)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": asgi_server}])
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.dismiss())
    return page


def on_the_live_picture(page, x: float, y: float) -> tuple[float, float]:
    """Where on the run page a point of the agent's tab is drawn (the live picture is scaled and letterboxed)."""
    return page.evaluate(
        """([x, y]) => {
            const img = document.getElementById("live-img");
            const size = window.Pilothouse.liveView.frameSize();
            const box = img.getBoundingClientRect();
            const scale = Math.min(box.width / img.naturalWidth, box.height / img.naturalHeight);
            const width = img.naturalWidth * scale, height = img.naturalHeight * scale;
            return [box.left + (box.width - width) / 2 + (x / size.width) * width,
                    box.top + (box.height - height) / 2 + (y / size.height) * height];
        }""",
        [x, y],
    )


def frames_shown(page) -> int:
    """How many live-view frames the run page has drawn."""
    return int(page.evaluate("Number(document.getElementById('live-view').dataset.frames || 0)"))


def slow(reply: dict, seconds: float = 1.2):
    """A reply the stub sends after a pause, so the run is visibly running while the test watches."""

    def answer(request):
        time.sleep(seconds)
        return reply

    return answer


def open_subscribed(page, url: str, ready: str = '"subscribed"') -> None:
    """Open the page and return once its socket said `ready` (subscribed, caught up), so what follows is a push."""
    frames: list[str] = []
    page.on("websocket", lambda socket: socket.on("framereceived", lambda payload: frames.append(str(payload))))
    page.goto(url)
    page.wait_for_function("window.Pilothouse !== undefined")
    for _ in range(600):  # bounded: a socket that never subscribes fails the test, it does not hang it
        if any(ready in frame for frame in frames):
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"the page's socket never said {ready}: {frames}")


LIVE_SOCKET_SCRIPT = """async ({url, inputs, settleMs}) => {
  const received = [];
  let answered = 0, closed = false;
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onmessage = (message) => {
      const data = JSON.parse(message.data);
      if (data.type !== "frame") received.push(data);
      if (data.type === "input_ack" || data.type === "input_refused") answered += 1;
      if (data.type === "watching") resolve();
    };
    socket.onclose = (event) => { closed = true; received.push({type: "closed", code: event.code}); resolve(); };
    setTimeout(() => reject(new Error("the live socket never said watching")), 15000);
  });
  for (const [index, input] of inputs.entries()) {
    if (socket.readyState !== WebSocket.OPEN) break;
    socket.send(JSON.stringify({type: "input", id: index + 1, ...input}));
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  // Every input is answered (by the web or the worker): wait for all of them, however loaded the machine.
  for (let waited = 0; answered < inputs.length && !closed && waited < 30000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  socket.close();
  return received;
}"""


def send_over_live_socket(asgi_server: str, user, run_public_id: str, inputs: list[dict], settle_ms: int = 800):
    """Open the run's live socket as `user` from real Chromium (a page of the web's own origin, signed in through a
    real session cookie), send each input numbered from 1, and return what the socket sent back (frames left out:
    refusals, and the worker's acknowledgements by number). Playwright runs in
    a thread of its own: its sync API would make this thread's later ORM calls refuse to run."""
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    url = asgi_server.replace("http://", "ws://") + f"/ws/runs/{run_public_id}/live/"

    def drive():
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=settings.BROWSER_EXECUTABLE, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context()
                context.add_cookies([{"name": "sessionid", "value": cookie, "url": asgi_server}])
                page = context.new_page()
                page.goto(f"{asgi_server}/login/")
                return page.evaluate(LIVE_SOCKET_SCRIPT, {"url": url, "inputs": inputs, "settleMs": settle_ms})
            finally:
                browser.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(drive).result(timeout=90)
