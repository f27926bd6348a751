"""What a turn of the agent writes (the model request that produced it, its events, the run's signals, the live-view
image) and the run's lane that writes it, off the model's critical path.

A turn's record is written in one transaction by the run's lane (runtime.lane) while the model answers the next
request, with the live-view image taken first; pushes follow the commit. The model's requests are built from the
loop's conversation alone, never from the record. What a worker lost mid-turn can lose: before a reply's first
browser action the lane is flushed, so nothing reaches the web before every earlier turn is committed; what is lost is
at most the turn in progress (its request's usage, its events), which is the turn the model's next request would have
been built from - a request that then is never sent, or whose reply is never acted on. Before the run ends, before an
outcome is graded and before the judge (queued by lifecycle.finish) reads, the lane is flushed.

The record written before each model request carries the run's checkpoint (runtime.checkpoint): another worker
continues a run its worker lost from the last one committed, so what a lost worker's run loses is the same turn in
progress, which the next worker redoes (runs.handover).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from runs import lifecycle
from runs.models import Run
from runs.usage import Answered, record_turn

from . import checkpoint
from .lane import Lane, LaneFailed

log = logging.getLogger(__name__)


class NotThisWorkers(Exception):
    """The run was handed over to another worker (runs.handover): this one's record is refused."""


class TurnRecord:
    """The current turn's record as the loop builds it, and the lane that writes each turn's in order.

    The run's signals are written here and only here: with a turn's record whenever they changed since the last one
    written (the run's ending writes them once more, with lifecycle.finish).
    """

    def __init__(
        self,
        run: Run,
        *,
        handovers: int,
        signals: Callable[[], dict[str, Any]],
        live_view_image: Callable[[], Callable[[], str | None]],
        browser_state: Callable[[], dict[str, Any] | None],
    ) -> None:
        self.run = run
        self.handovers = handovers
        self.browser_state = browser_state
        self.lane = Lane(run.public_id)
        self.signals = signals
        self.live_view_image = live_view_image
        self.answered: Answered | None = None
        self.compactions: list[Answered] = []
        self.events: list[tuple[str, dict[str, Any], datetime]] = []
        # the tool_result event data the turn's live-view image belongs to
        self.live_view_for: dict[str, Any] | None = None
        self.acting = False  # the current reply's first browser action has run: the lane had caught up for it
        # the lane's mark before the last turn's record: every job up to it is written before the next action
        self.earlier_turns = 0
        self.written_signals: dict[str, Any] | None = None  # none yet: the first turn's record carries them

    def event(self, type: str, data: dict[str, Any]) -> None:
        self.events.append((type, data, timezone.now()))

    def reply(self, answered: Answered, compactions: list[Answered]) -> None:
        """A new reply: the request that produced it (and the server's compaction steps before it) is billed with this
        turn's record."""
        self.answered, self.compactions = answered, compactions
        self.acting = False

    def hand_off(self, taken: checkpoint.Taken | None = None) -> None:
        """Hand the turn's record (and its live-view image) to the lane, with the signals when they changed, so the
        live page shows them, and the checkpoint `taken` (runtime.checkpoint) with the browser state as last read.

        Written only while the run is this worker's: in the same transaction the run's heartbeat is written under the
        handovers it was claimed with, and a run handed over since refuses the whole record (NotThisWorkers)."""
        self.earlier_turns = self.lane.submitted
        answered, compactions, events, current = self.answered, self.compactions, self.events, self.signals()
        signals = current if current != self.written_signals else None
        live_view_for, self.live_view_for = self.live_view_for, None
        self.answered, self.compactions, self.events = None, [], []
        if answered is None and not events and signals is None and taken is None:
            return
        if signals is not None:
            self.written_signals = signals
        run, handovers, browser_state = self.run, self.handovers, self.browser_state
        # the image begun for this turn, taken now: the lane may save it after the next turn has begun its own
        save_image = self.live_view_image() if live_view_for is not None else None

        def write() -> None:
            if live_view_for is not None and save_image is not None:
                live_view_for["screenshot_url"] = save_image()
            with transaction.atomic():
                if not lifecycle.heartbeat(run, handovers):
                    raise NotThisWorkers(f"run {run.public_id} was handed over to another worker")
                record_turn(run, answered=answered, compactions=compactions, events=events, signals=signals)
                if taken is not None:
                    checkpoint.write(run, handovers, taken, browser_state())

        self.lane.submit(write)

    def also(self, job: Callable[[], None]) -> None:
        """Other work the model does not wait for (reading the browser's state), on the lane after the turn's record;
        `job` must not raise, or the lane stops as for a record that failed."""
        self.lane.submit(job)

    def before_acting(self) -> None:
        """Before a reply's first browser action: every turn before the last one is committed. The last one's record
        is written while this reply acts (its live-view image and storage state were read from the browser before
        the action: RunBrowser.reads_done), so a worker lost mid-action leaves at most that turn to do again."""
        if not self.acting:
            self.acting = True
            self.lane.wait_for(self.earlier_turns)

    def flush(self) -> None:
        self.lane.flush()

    def close(self) -> None:
        """Write what is left and end the lane; a record that cannot be written is logged, never raised (the run is
        ending anyway)."""
        try:
            self.hand_off()
            self.lane.flush()
        except LaneFailed:
            log.warning("run %s: part of its record could not be written", self.run.public_id, exc_info=True)
        finally:
            self.lane.close()
