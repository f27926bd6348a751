"""A run's background lane: work the model does not wait for (the live-view screenshot, the turn's record, its
pushes) done in order on one thread of the run's own, while the loop goes on with the next model request."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from django.db import connection

from agent_platform import db

log = logging.getLogger(__name__)

# Jobs waiting at most: a database slower than the agent slows the run down instead of piling up its turns in memory.
LANE_CAPACITY = 4
_STOP = object()


class LaneFailed(Exception):
    """A job of the lane failed; the loop sees it at its next hand-off or flush, as if it had failed itself."""


class Lane:
    """One worker thread running the jobs handed to it in the order they came, with a bounded queue.

    A failed job stops the lane from running more (a record with a hole in it is worse than a run that fails): the
    loop learns of it at its next `submit` or `flush`. `close` flushes and ends the thread; the thread's own
    database connection is closed with it.
    """

    def __init__(self, name: str, capacity: int = LANE_CAPACITY) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=capacity)
        self._failure: BaseException | None = None
        # jobs handed to the lane and jobs it has finished (run, or skipped after a failure), for wait_for
        self._submitted = 0
        self._finished = 0
        self._progress = threading.Condition()
        self._thread = threading.Thread(target=self._work, name=f"lane-{name}", daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], Any]) -> None:
        """Queue a job (waiting while the lane is full)."""
        self._raise_failure()
        db.release()  # the lane's thread may need a connection of the pool before this one can go on
        with self._progress:
            self._submitted += 1
        self._queue.put(job)

    @property
    def submitted(self) -> int:
        """How many jobs have been handed to the lane so far: a mark for wait_for."""
        return self._submitted

    def wait_for(self, mark: int) -> None:
        """Wait until the first `mark` jobs handed to the lane have run (later ones may still be running); raise
        LaneFailed if one failed."""
        db.release()
        with self._progress:
            self._progress.wait_for(lambda: self._finished >= mark)
        self._raise_failure()

    def flush(self) -> None:
        """Wait until every job handed so far has run; raise LaneFailed if one failed."""
        db.release()
        self._queue.join()
        self._raise_failure()

    def close(self) -> None:
        """Run what is queued, then end the thread. Idempotent; never raises (the loop is ending anyway)."""
        if not self._thread.is_alive():
            return
        db.release()
        self._queue.put(_STOP)
        self._thread.join()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise LaneFailed(f"the run's background lane failed: {self._failure!r}") from self._failure

    def _work(self) -> None:
        try:
            while True:
                job = self._queue.get()
                try:
                    if job is _STOP:
                        return
                    if self._failure is None:
                        job()
                except BaseException as error:  # kept for the loop, which decides what a failure means
                    log.warning("a job of %s failed", threading.current_thread().name, exc_info=True)
                    self._failure = error
                finally:
                    db.release()  # between jobs the lane waits on the loop: its connection goes back to the pool
                    if job is not _STOP:
                        with self._progress:
                            self._finished += 1
                            self._progress.notify_all()
                    self._queue.task_done()
        finally:
            connection.close()
