"""The operator's live viewer for real: Daphne serving the ASGI application on the test database, Chromium through
Playwright's sync API, a page signed in as an operator, and events emitted from outside Playwright's thread."""

import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from playwright.sync_api import sync_playwright

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


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """Daphne serving the real ASGI application (HTTP and websockets) on the test database."""
    port = free_port()
    with django_db_blocker.unblock():
        env = worker_environment()
    log_path = tmp_path_factory.mktemp("daphne") / "daphne.log"
    log = open(log_path, "ab")  # noqa: SIM115  (kept open for the process's lifetime)
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    # Generous: on a loaded machine Django's start-up alone can take half a minute; a server that never listens is
    # an error here, not a connection refused in the first test that calls it.
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited:\n{log_path.read_text()[-3000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"daphne did not listen within 120 s:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.2)
    yield f"http://127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture
def chromium():
    # Per test: Playwright's sync API keeps an event loop marked running in this thread while it is open, which
    # would break every async test that runs after it.
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
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onmessage = (message) => {
      const data = JSON.parse(message.data);
      if (data.type !== "frame") received.push(data);
      if (data.type === "watching") resolve();
    };
    socket.onclose = (event) => { received.push({type: "closed", code: event.code}); resolve(); };
    setTimeout(() => reject(new Error("the live socket never said watching")), 15000);
  });
  for (const input of inputs) {
    if (socket.readyState !== WebSocket.OPEN) break;
    socket.send(JSON.stringify({type: "input", ...input}));
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  await new Promise((resolve) => setTimeout(resolve, settleMs));
  socket.close();
  return received;
}"""


def send_over_live_socket(asgi_server: str, user, run_public_id: str, inputs: list[dict], settle_ms: int = 800):
    """Open the run's live socket as `user` from real Chromium (a page of the web's own origin, signed in through a
    real session cookie), send each input, and return what the socket sent back (frames left out). Playwright runs in
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
