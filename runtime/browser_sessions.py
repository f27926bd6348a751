"""The worker's half of browser sessions: a dedicated Chromium per session, whose only way out is the egress guard,
its CDP endpoint on loopback reached through this worker's relay (the web tier connects to it with the session's
token), its timeline read from CDP, and its end: stop, idle timeout, maximum duration or a Chromium that exited."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from celery import Task, shared_task
from django.conf import settings
from django.db import connection
from playwright.async_api import BrowserContext, Download, Page, async_playwright
from playwright.async_api import Error as PlaywrightError

from agent_platform import db as database
from agent_platform.netpolicy import BlockedRequest
from browsers import services, storage
from browsers.cdp import WebSocketClient
from browsers.models import BrowserSession
from runs import event_types
from runs.profiles.models import Profile
from runs.proxies import open_proxy, proxy_policy
from runtime import heartbeats
from runtime.browser import control, live_view
from runtime.browser.egress_proxy import Budget, EgressProxy, read_head, respond
from runtime.browser.host import CHROMIUM_ARGS
from runtime.browser.network_guard import NetworkGuard
from runtime.browser.upstream import UpstreamDialer

log = logging.getLogger(__name__)
T = TypeVar("T")

# How often the session looks for a stop, an idle or overlong browser, and how long its start may take.
WATCH_SECONDS = 1.0
START_TIMEOUT_SECONDS = 60.0
ACTIVITY_WRITE_SECONDS = 10.0
RELAY_MAX_BYTES = 4 * 1024 * 1024 * 1024
SESSION_ARGS = (
    *CHROMIUM_ARGS,
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    # WebRTC's UDP would leave without the proxy: only proxied connections are allowed
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)


def relay_host() -> str:
    """The address this worker's relays listen on, which the web tier connects to: BROWSER_RELAY_HOST, or else the
    address this machine reaches Redis from. Web machines reach Redis too, so they share that network with the worker:
    on one machine with a local Redis it is loopback, on a worker machine its address on the installation's network.
    Finding it sends nothing (a UDP socket's connect only picks the route)."""
    if settings.BROWSER_RELAY_HOST:
        return str(settings.BROWSER_RELAY_HOST)
    redis = urlparse(settings.REDIS_URL)
    if redis.scheme == "unix" or not redis.hostname:
        return "127.0.0.1"
    family, _, _, _, address = socket.getaddrinfo(redis.hostname, redis.port or 6379, type=socket.SOCK_DGRAM)[0]
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect(address)
        return str(probe.getsockname()[0])


@shared_task(name="browsers.tasks.run_session", bind=True, acks_late=True, max_retries=0, ignore_result=True)  # type: ignore[untyped-decorator]  # celery ships no type information
def run_session(self: Task, session_pk: int) -> None:
    """Run one browser session in this worker thread until it ends; never retried (a browser is not resumed)."""
    session = services.claim(session_pk, worker=self.request.hostname or "worker")
    if session is None:
        return
    runner = SessionRunner(session)
    # the process's one heartbeat writer says this worker still holds the browser; the reaper ends it once it stops
    heartbeats.writer().add_browser_session(session.pk)
    # this thread waits on the session from here on: its connection goes back (the runner's thread takes one per call)
    database.release()
    try:
        asyncio.run(runner.run())
    except Exception as error:
        log.exception("browser session %s failed", session.public_id)
        now = BrowserSession.objects.filter(pk=session.pk).first()  # None: deleted while it ran (its workspace's)
        if now is not None and now.is_live:
            reason = (
                BrowserSession.StopReason.BROWSER_EXITED if now.started_at else BrowserSession.StopReason.START_FAILED
            )
            services.end(now, reason, f"{type(error).__name__}: {error}")
    finally:
        heartbeats.writer().remove_browser_session(session.pk)


class SessionLoop:
    """The session's own event loop, as the live view and take control use a run's browser host (live_view.PageLoop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)


def close_database() -> None:
    """Close the calling thread's connection (the session's database thread calls it: `connection` is per thread)."""
    connection.close()


class SessionRunner:
    """One session's browser, relay and watch, on one asyncio loop; the database is reached from a thread of its own."""

    def __init__(self, session: BrowserSession) -> None:
        self.session = session
        self.token = session.token()
        self.last_activity = time.monotonic()
        self.activity_written = self.last_activity
        self.relay_writers: set[asyncio.StreamWriter] = set()
        self.relay_tasks: set[asyncio.Task[Any]] = set()
        self.chrome_port = 0
        self.chrome_path = ""
        self.exited = asyncio.Event()
        self.playwright_files: set[str] = set()
        self.pending: set[asyncio.Future[Any]] = set()
        self.kept = Path()
        self.context: BrowserContext | None = None
        # the session page's live picture and a person's input: the process's one watcher and one inbox serve them
        self.live: live_view.LiveView | None = None
        self.control: control.InputDispatcher | None = None
        self._db = ThreadPoolExecutor(1, thread_name_prefix="browser-session-db")

    async def db(self, function: Any, *args: Any) -> Any:
        """`function(*args)` on the session's database thread, which gives its connection back after each call: a
        session lasts minutes to hours and needs the database for moments, and one whose end fails (its row deleted
        under it) must not keep one for good."""
        return await asyncio.get_running_loop().run_in_executor(self._db, database.released_after, function, *args)

    async def run(self) -> None:
        session = self.session
        folder = Path(tempfile.mkdtemp(prefix="pilothouse-browser-"))
        downloads = folder / "downloads"
        downloads.mkdir()
        self.kept = folder / "kept"
        self.kept.mkdir()
        guard = NetworkGuard(allowed_private_hosts=settings.BROWSER_ALLOWED_PRIVATE_HOSTS)
        guard._listeners.append(lambda blocked: self.on_refused(blocked))
        upstream = await self.db(self.upstream_dialer)
        proxy = await EgressProxy(guard, upstream=upstream).start()
        relay: asyncio.Server | None = None
        playwright = None
        context: BrowserContext | None = None
        observer_task: asyncio.Task[None] | None = None
        try:
            # the egress proxy must see loopback connections too: never let the driver exempt them
            os.environ.pop("PLAYWRIGHT_DISABLE_FORCED_CHROMIUM_PROXIED_LOOPBACK", None)
            playwright = await async_playwright().start()
            context = await playwright.chromium.launch_persistent_context(
                str(folder / "profile"),
                executable_path=settings.BROWSER_EXECUTABLE,
                headless=True,
                args=list(SESSION_ARGS),
                # --proxy-server for the whole browser: every context a client creates goes through the guard too
                proxy={"server": proxy.url},
                viewport={"width": session.viewport_width, "height": session.viewport_height},
                device_scale_factor=1,
                service_workers="block",
                accept_downloads=True,
                downloads_path=str(downloads),
                # Chromium gets no secret of the worker's environment
                env={"HOME": str(folder), "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
            self.context = context
            context.on("close", lambda _context: self.exited.set())
            context.on("page", self.watch_page)
            for page in context.pages:
                self.watch_page(page)
            state = await self.db(self.starting_state)
            if state and state.get("cookies"):
                await context.add_cookies(state["cookies"])
            if session.record:
                await context.tracing.start(screenshots=True, snapshots=True)
            self.chrome_port, self.chrome_path = await self.devtools_endpoint(folder / "profile")
            observer_task = asyncio.ensure_future(self.observe())
            host = relay_host()
            relay = await asyncio.start_server(self.accept, host, 0)
            port = relay.sockets[0].getsockname()[1]
            running = await self.db(services.mark_running, session, f"{host}:{port}", str(downloads))
            if running:
                await self.db(self.attach_people, SessionLoop(asyncio.get_running_loop()))
            reason = await self.watch() if running else BrowserSession.StopReason.REQUESTED
            error = "Chromium exited." if reason == BrowserSession.StopReason.BROWSER_EXITED else ""
        except BaseException:
            reason, error = "", ""
            raise
        finally:
            await self.db(self.detach_people)
            if relay is not None:
                relay.close()
            for writer in list(self.relay_writers):
                writer.close()
            for task in list(self.relay_tasks):
                task.cancel()
            if observer_task is not None:
                observer_task.cancel()
            if context is not None and not self.exited.is_set():
                await self.keep_what_is_left(context, folder)
            await asyncio.gather(*self.pending, return_exceptions=True)
            with contextlib.suppress(Exception):
                if context is not None:
                    await context.close()
            with contextlib.suppress(Exception):
                if playwright is not None:
                    await playwright.stop()
            await proxy.close()
            try:
                await self.db(self.store_downloads, [downloads, self.kept])
                shutil.rmtree(folder, ignore_errors=True)
                await asyncio.gather(*self.pending, return_exceptions=True)
                if reason:
                    await self.db(services.end, session, reason, error)
            finally:
                await self.db(close_database)  # without a pool (SQLite) the thread kept its own
                self._db.shutdown(wait=True)

    # --- start ---------------------------------------------------------------------------------------------

    def upstream_dialer(self) -> UpstreamDialer | None:
        proxy = self.session.proxy
        if proxy is None:
            return None
        return UpstreamDialer(open_proxy(proxy), timeout=settings.PROXY_CONNECT_TIMEOUT_SECONDS, policy=proxy_policy())

    def starting_state(self) -> dict[str, Any] | None:
        if self.session.profile_id is None:
            return None
        profile = Profile.objects.filter(pk=self.session.profile_id).first()
        return profile.state() if profile is not None else None

    async def devtools_endpoint(self, profile_dir: Path) -> tuple[int, str]:
        """Chromium writes the port it chose and the browser's path to DevToolsActivePort once it listens."""
        marker = profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                port, path = marker.read_text().split("\n")[:2]
                if port and path:
                    return int(port), path
            await asyncio.sleep(0.05)
        raise RuntimeError("Chromium did not open its DevTools endpoint")

    # --- people on the session's page: its live picture and take control ------------------------------------

    def active_page(self) -> Page | None:
        """The page shown and driven: the default context's newest open page (a CDP client's new_page()). On the
        session's loop."""
        pages = [page for page in self.context.pages if not page.is_closed()] if self.context is not None else []
        return pages[-1] if pages else None

    def attach_people(self, host: SessionLoop) -> None:
        """From the database thread (attaching waits on the process's inbox, never on the session's loop). A person
        may drive the page whenever the session runs: the web lets only members of its workspace send input."""
        key = self.session.public_id
        self.live = live_view.attach_page(host, key, self.active_page)
        self.control = control.attach(host, key, self.active_page, accepting=True)

    def detach_people(self) -> None:
        """From the database thread: stopping runs its last steps on the session's loop, which waits meanwhile."""
        for part in (self.control, self.live):
            if part is not None:
                with contextlib.suppress(Exception):
                    part.stop()
        self.control = self.live = None

    # --- the relay: the web tier's connections to this browser's CDP endpoint ------------------------------

    async def accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.relay_tasks.add(task)
        self.relay_writers.add(writer)
        try:
            request = await read_head(reader)
            if request is None or request.method != "GET" or request.target != f"/cdp/{self.token}":
                await respond(writer, 403, "Not this session's token.")
                return
            browser_reader, browser_writer = await asyncio.open_connection("127.0.0.1", self.chrome_port)
            self.relay_writers.add(browser_writer)
            kept = [f"{name}: {value}" for name, value in request.headers if name.lower() not in ("host", "origin")]
            head = [f"GET {self.chrome_path} HTTP/1.1", f"Host: 127.0.0.1:{self.chrome_port}", *kept]
            browser_writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            await browser_writer.drain()
            await asyncio.gather(self.pipe_active(reader, browser_writer), self.pipe_active(browser_reader, writer))
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        except asyncio.CancelledError:
            pass
        finally:
            writer.close()
            self.relay_writers.discard(writer)
            if task is not None:
                self.relay_tasks.discard(task)

    async def pipe_active(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        """Bytes one way, each chunk counted as the client's activity (the idle timeout reads it)."""
        budget = Budget(RELAY_MAX_BYTES)
        try:
            while True:
                chunk = await source.read(64 * 1024)
                if not chunk or not budget.spend(len(chunk)):
                    break
                self.last_activity = time.monotonic()
                sink.write(chunk)
                await sink.drain()
        finally:
            sink.close()

    # --- the watch ---------------------------------------------------------------------------------------------

    async def watch(self) -> str:
        session = self.session
        started = time.monotonic()
        while True:
            try:
                await asyncio.wait_for(self.exited.wait(), WATCH_SECONDS)
                return BrowserSession.StopReason.BROWSER_EXITED
            except TimeoutError:
                pass
            now = time.monotonic()
            stop: str = await self.db(services.stop_requested, session.pk)
            if stop:
                return stop
            if now - self.last_activity > session.idle_timeout_seconds:
                return BrowserSession.StopReason.IDLE_TIMEOUT
            if now - started > session.max_duration_seconds:
                return BrowserSession.StopReason.MAX_DURATION
            if self.last_activity > self.activity_written and now - self.activity_written > ACTIVITY_WRITE_SECONDS:
                self.activity_written = now
                await self.db(services.touch, session.pk)

    # --- the timeline ------------------------------------------------------------------------------------------

    def note(self, type: str, payload: dict[str, Any]) -> None:
        pending = asyncio.ensure_future(self.db(services.record, self.session.pk, type, payload))
        self.pending.add(pending)
        pending.add_done_callback(self.pending.discard)

    def on_refused(self, blocked: BlockedRequest) -> None:
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop()
            self.note(event_types.BROWSER_REFUSED.name, {"url": blocked.url[:500], "reason": blocked.reason[:300]})

    async def observe(self) -> None:
        """Every target of every context, as Chromium announces them: opened, navigated, closed."""
        client = await WebSocketClient.connect("127.0.0.1", self.chrome_port, self.chrome_path)
        urls: dict[str, str] = {}
        try:
            await client.send(
                json.dumps({"id": 1, "method": "Target.setDiscoverTargets", "params": {"discover": True}})
            )
            while True:
                message = await client.receive()
                if message is None:
                    return
                data = json.loads(message)
                info = (data.get("params") or {}).get("targetInfo") or {}
                method = data.get("method")
                if info.get("type") not in (None, "page"):
                    continue
                target = info.get("targetId", "")
                if method == "Target.targetCreated":
                    urls[target] = info.get("url", "")
                    self.note(
                        event_types.BROWSER_TARGET_CREATED.name,
                        {
                            "target_id": target,
                            "url": info.get("url", "")[:500],
                            "context_id": info.get("browserContextId", ""),
                        },
                    )
                elif method == "Target.targetInfoChanged" and urls.get(target) != info.get("url", ""):
                    urls[target] = info.get("url", "")
                    self.note(
                        event_types.BROWSER_NAVIGATED.name,
                        {"target_id": target, "url": urls[target][:500], "title": info.get("title", "")[:200]},
                    )
                elif method == "Target.targetDestroyed":
                    target = (data.get("params") or {}).get("targetId", "")
                    if target in urls:
                        urls.pop(target)
                        self.note(event_types.BROWSER_TARGET_DESTROYED.name, {"target_id": target})
        finally:
            await client.close()

    def watch_page(self, page: Page) -> None:
        def on_download(download: Download) -> None:
            kept = asyncio.ensure_future(self.keep_download(download))
            self.pending.add(kept)
            kept.add_done_callback(self.pending.discard)

        page.on("download", on_download)

    async def keep_download(self, download: Download) -> None:
        """A download of the default context, kept under its suggested name (Playwright names its file by a GUID)."""
        name = storage.clean_name(download.suggested_filename)
        with contextlib.suppress(PlaywrightError):
            self.playwright_files.add(Path(await download.path()).name)
            await download.save_as(self.kept / name)
            self.note(event_types.BROWSER_DOWNLOAD.name, {"url": download.url[:500], "name": name})

    # --- the end -------------------------------------------------------------------------------------------------

    async def keep_what_is_left(self, context: BrowserContext, folder: Path) -> None:
        """The final page (the judge and the console read it), the recording and the profile's state."""
        session = self.session
        pages = [page for page in context.pages if not page.is_closed()]
        if pages:
            page = pages[-1]
            with contextlib.suppress(PlaywrightError, TimeoutError):
                png = await page.screenshot(timeout=10_000)
                name = await self.db(storage.save_screenshot, session, png)
                title = await page.title()
                text = await page.inner_text("body", timeout=5_000)
                await self.db(services.keep_final_page, session.pk, name, page.url, title, text)
        if session.record:
            with contextlib.suppress(PlaywrightError):
                trace = folder / "trace.zip"
                await context.tracing.stop(path=str(trace))
                await self.db(storage.save_trace, session, trace.read_bytes())
        if session.save_profile and session.profile_id is not None:
            with contextlib.suppress(PlaywrightError):
                state = await context.storage_state()
                await self.db(services.save_profile_state, session, state)

    def store_downloads(self, folders: list[Path]) -> None:
        """What the browser downloaded, into the session's storage: clients' contexts write to the session's folder
        (the relay rewrites their download path), the default context's are kept by name."""
        for folder in folders:
            for path in sorted(folder.iterdir()):
                if path.is_file() and path.name not in self.playwright_files:
                    storage.save_download(self.session, path.name, path.read_bytes())
