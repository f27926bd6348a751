"""The worker process's one heartbeat writer: every run this process holds beats in one statement, fenced by the
handovers each was claimed under, so the reaper fails only runs whose worker is really gone; every browser session it
holds beats in one more, so the reaper ends a session whose worker is gone."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator

from django.conf import settings

from agent_platform import db
from browsers import services as browser_sessions
from runs import lifecycle
from runs.models import Run

log = logging.getLogger(__name__)


def interval() -> float:
    """Seconds between beats: a quarter of the time after which the reaper takes a silent run for lost, at most 10."""
    return max(1.0, min(10.0, settings.RUN_STALE_AFTER_SECONDS / 4))


class Heartbeat:
    """One run's part in the process's beats: while started, its heartbeat stays fresh as the loop waits on the model,
    the browser or a person. It gives up past the run's time limit (a hung loop is reaped after all), but never while
    a person is awaited. `superseded` turns true when another worker holds the run now: this one must leave it."""

    def __init__(self, run: Run, handovers: int) -> None:
        self.run_pk = run.pk
        self.public_id = run.public_id
        self.handovers = handovers
        self.superseded = False
        self.interval = interval()
        self.give_up_at = time.monotonic() + settings.RUN_TIME_LIMIT_SECONDS + 120
        self.waiting = 0  # waits for a person in progress (the loop's thread sets it, the writer reads it)

    @contextlib.contextmanager
    def waiting_for_person(self) -> Iterator[None]:
        """While the loop waits for a person it is not hung, however long the wait: the heartbeat keeps beating, and
        the time spent counts neither toward the run's limit nor toward giving up here."""
        started = time.monotonic()
        self.waiting += 1
        try:
            yield
        finally:
            self.give_up_at += time.monotonic() - started
            self.waiting -= 1

    def alive(self) -> bool:
        return self.waiting > 0 or time.monotonic() < self.give_up_at

    def start(self) -> None:
        writer().add(self)

    def stop(self) -> None:
        writer().remove(self)

    @property
    def beating(self) -> bool:
        return writer().holds(self)


class HeartbeatWriter:
    """One thread that beats, every `interval()` seconds, for all the runs registered with it, in one UPDATE; it holds
    a database connection only for that statement."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._beats: set[Heartbeat] = set()
        self._sessions: set[int] = set()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()

    def _running(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._work, name="heartbeats", daemon=True)
            self._thread.start()

    def add(self, beat: Heartbeat) -> None:
        with self._lock:
            self._beats.add(beat)
            self._running()

    def add_browser_session(self, session_pk: int) -> None:
        """A browser session whose Chromium this process holds beats until `remove_browser_session`."""
        with self._lock:
            self._sessions.add(session_pk)
            self._running()

    def remove_browser_session(self, session_pk: int) -> None:
        with self._lock:
            self._sessions.discard(session_pk)

    def remove(self, beat: Heartbeat) -> None:
        with self._lock:
            self._beats.discard(beat)

    def holds(self, beat: Heartbeat) -> bool:
        with self._lock:
            return beat in self._beats

    def beat_now(self) -> None:
        """One round of beats: the runs past their give-up time leave the set, those another worker took are told."""
        with self._lock:
            given_up = {beat for beat in self._beats if not beat.alive()}
            self._beats -= given_up
            beats = list(self._beats)
            sessions = list(self._sessions)
        for beat in given_up:
            log.warning("run %s: its loop is past its time limit; its heartbeat stops", beat.public_id)
        if sessions:
            try:
                browser_sessions.heartbeats(sessions)
            except Exception:
                log.warning("the heartbeat of %s browser sessions failed", len(sessions), exc_info=True)
            finally:
                db.release()
        if not beats:
            return
        try:
            superseded = lifecycle.heartbeats([(beat.run_pk, beat.handovers) for beat in beats])
        except Exception:
            log.warning("the heartbeat of %s runs failed", len(beats), exc_info=True)
            return
        finally:
            db.release()
        for beat in beats:
            if beat.run_pk in superseded:
                beat.superseded = True
                self.remove(beat)

    def _work(self) -> None:
        while True:
            self._wake.wait(interval())
            self._wake.clear()
            self.beat_now()


_writer = HeartbeatWriter()


def writer() -> HeartbeatWriter:
    """The process's heartbeat writer."""
    return _writer
