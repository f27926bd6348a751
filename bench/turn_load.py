"""Turn load: the turn-record and live-push path of many concurrent runs against the real PostgreSQL and Redis, with
no browser and no model, and what each turn costs the database, Redis and the worker.

The script creates the runs (real Run rows, running, in `--workspaces` workspaces), then starts `--processes` driver
processes (the worker machines' processes) and one receiver process (the web's live sockets). Each driver gives its
runs the worker's own objects: a `runtime.record.TurnRecord` per run, whose turns go through a `runtime.lane.Lane`
to `runs.usage.record_turn` (the model request, the turn's events and the run's signals in one transaction), the
live-view image saved to storage and the heartbeat, then the pushes to the run's Channels group over Redis. Each
simulated run hands off a turn every `--interval` seconds, shaped like a real turn (an agent.message, an
agent.tool_use, an agent.tool_result of the sizes measured from the runtime's own benchmark runs, the model
request's usage, the changed signals, a live-view JPEG), and beats its heartbeat at the loop's heartbeat interval.
A worker gives each run its own lane thread, and its process one heartbeat writer (runtime.heartbeats); here the runs
of a driver share `--lanes` lanes and one heartbeat lane, each run always on the same lane, so its turns are written
in order. Their connections come from the process's pool, as a worker's do: the peak of the drivers' server
connections (pg_stat_activity) must stay within DB_POOL_MAX x processes, whatever the lanes.

The receiver subscribes a channel to the groups of every `--sample-every`-th run (a viewer on its run page) and one
to each workspace's group (a runs list open), as the web's consumers do, and notes when each push arrives. The
driver notes when each push is handed to the push loop (the commit: `transaction.on_commit`) with a wrapper installed
in its own process only.

After a warm-up turn per run, two phases: `steady` at the offered cadence, then `saturate`, where every run hands
off its next turn as soon as its lane takes it, for the most this machine can write. Per phase: turns/s, the hand-off-to-commit and record_turn
latencies, push delivery latency; per turn: PostgreSQL commits, rows, WAL bytes and CPU of our backends, Redis
commands, bytes and CPU, the drivers' CPU, from pg_stat_database, pg_current_wal_lsn, Redis INFO and /proc. PostgreSQL
and Redis are shared with whatever else runs on the machine: their rates in idle windows before and after the phases
are measured and subtracted (not the WAL, which other databases write in bursts: it is reported whole, an upper
bound). On SQLite only Redis's counters and /proc are read. At the end every run's events are checked gap-free and duplicate-free, one model
request per turn, and every push to a watched run received exactly once.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python bench/turn_load.py [--runs 1000] [--interval 10] [--duration 60] [--saturate 30]
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from _common import REPO, ConnectionPeak, header, load_average, percentile, stats, table

if TYPE_CHECKING:
    from runs.models import Run
    from runtime.record import TurnRecord

APPLICATION_NAME = "pilothouse-turn-load"  # how this script's driver connections are found in pg_stat_activity
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A PostgreSQL backend reports its counters to pg_stat_database at most once a second, and within a second of going idle.
STATS_FLUSH_SECONDS = 1.5

# What a turn holds, sized from the runtime's own runs (bench/turn_overhead.py over the fixture pages, 34 turns at
# commit d8fe408): agent.tool_result 7.6 KB of JSON on average (21 KB at most: a read_page of a listing; a click's
# result is a few hundred bytes), agent.tool_use 140 B, agent.usage 240 B; the live-view JPEG (quality 70,
# 1280x800) 85 KB on average. Real models write a line or two of progress text per turn (agent.message).
TOOL_RESULT_CHARS = (18_000, 2_000, 2_500)  # cycled: a read of the page, then two actions
MESSAGE_CHARS = 300
LIVE_VIEW_BYTES = 85_000
# A signed-in site's storage state, sealed into each turn's checkpoint: a dozen cookies and a few stored values.
BROWSER_STATE = {
    "cookies": [
        {"name": f"cookie_{index}", "value": "v" * 120, "domain": "shop.example", "path": "/", "expires": -1,
         "httpOnly": True, "secure": True, "sameSite": "Lax"}
        for index in range(12)
    ],
    "origins": [{"origin": "https://shop.example", "localStorage": [{"name": "cart", "value": "x" * 1500}]}],
}  # fmt: skip
USAGE = {
    "input_tokens": 1_800,
    "output_tokens": 320,
    "cache_read_input_tokens": 28_000,
    "cache_creation_input_tokens": 2_400,
}
# fmt: off
WORDS = (
    "basket", "casserole", "price", "shipping", "search", "results", "article", "review", "checkout", "address",
    "continue", "product", "cheapest", "filter", "sort", "newest", "rating", "stock", "delivery", "order",
    "account", "sign", "page", "next", "previous", "menu", "cookie", "accept", "button", "link", "heading", "list",
    "item", "image", "description", "quantity", "total", "discount",
)
# fmt: on
ROLES = ("link", "button", "heading", "text", "listitem", "img", "textbox", "checkbox")


def page_text(chars: int, seed: int) -> str:
    """An accessibility snapshot's shape (role, name, ref per line): it compresses as a real one does (about 4x)."""
    rng = random.Random(seed)
    lines: list[str] = []
    size = 0
    while size < chars:
        name = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6))).capitalize()
        line = f'{"  " * rng.randint(0, 4)}- {rng.choice(ROLES)} "{name}" [ref=e{rng.randint(1, 900)}]'
        if rng.random() < 0.2:
            line += f": ${rng.randint(1, 400)}.{rng.randint(0, 99):02d}"
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:chars]


# --- the driver: a worker's turn records for its share of the runs ---------------------------------------------------


@dataclass
class SimulatedRun:
    """One run's side of the loop: its TurnRecord and what it has handed off."""

    run: Run
    watched: bool
    record: TurnRecord = field(init=False)
    turns: int = 0

    def signals(self) -> dict[str, Any]:
        """The verdict phase's signals as a turn changes them: the turn count moves every turn."""
        return {
            "turns": self.turns,
            "max_turns": 30,
            "budget_notices": 0,
            "loop_nudges": 0,
            "stagnation_nudges": 0,
            "failures_max": 0,
            "verdict_turn": None,
            "verdict_followed": None,
        }


@dataclass
class DriverTally:
    """What one phase of a driver measured (in this process)."""

    handed_off: int = 0
    committed: int = 0
    commit_ms: list[float] = field(default_factory=list)  # hand-off to the turn committed (lane wait included)
    write_ms: list[float] = field(default_factory=list)  # record_turn itself
    late_ms: list[float] = field(default_factory=list)  # how far behind its cadence a hand-off was
    pushed: dict[str, float] = field(default_factory=dict)  # "run seq" of watched runs: when handed to the push loop
    sending: dict[str, float] = field(default_factory=dict)  # when the push loop began its group_send
    sent: dict[str, float] = field(default_factory=dict)  # when that group_send returned (Redis has the message)
    group_send_ms: list[float] = field(default_factory=list)  # every group_send of the process
    push_drain_s: float = 0.0  # after the phase's last commit, until the push loop had sent everything
    heartbeats: int = 0  # the heartbeat thread's beats (the lane beats too, with each turn)


class Driver:
    """The worker side: the runs' TurnRecords on shared lanes, a scheduler thread per lane handing off turns."""

    def __init__(self, run_ids: list[int], watched: set[int], lanes: int) -> None:
        from runs.models import Run
        from runtime.lane import Lane
        from runtime.record import TurnRecord

        self.lanes = [Lane(f"load-{index}") for index in range(lanes)]
        self.runs: list[SimulatedRun] = []
        for pk in run_ids:
            run = Run.objects.get(pk=pk)
            simulated = SimulatedRun(run, watched=pk in watched)
            record = TurnRecord(
                run,
                handovers=run.handovers,
                signals=simulated.signals,
                live_view_image=self.live_view_image(run),
                browser_state=lambda: BROWSER_STATE,
            )
            # A worker gives each run a lane of its own; here runs share lanes, so connections stay within PostgreSQL's.
            record.lane.close()
            record.lane = self.lanes[len(self.runs) % lanes]
            simulated.record = record
            self.runs.append(simulated)
        self.live_view = os.urandom(LIVE_VIEW_BYTES)  # a JPEG does not compress further
        self.texts = [page_text(chars, seed) for seed, chars in enumerate(TOOL_RESULT_CHARS)]
        self.message = page_text(MESSAGE_CHARS, 99).replace("\n", " ")
        self.tally = DriverTally()
        self.lock = threading.Lock()
        self.pushes_handed = 0  # group messages given to the push loop, and sent by it
        self.pushes_sent = 0
        self.install_timers()
        # the heartbeats' own thread and connection, kept for the driver's life like the lanes' (so their backends'
        # CPU is counted)
        self.heartbeat_lane = Lane("heartbeats", capacity=len(self.runs) + 1)
        for lane in [*self.lanes, self.heartbeat_lane]:  # each opens its connection now, not inside a measured turn
            lane.submit(self.connect)
        for lane in [*self.lanes, self.heartbeat_lane]:
            lane.flush()

    @staticmethod
    def connect() -> None:
        from django.db import connection

        connection.ensure_connection()

    def live_view_image(self, run: Run) -> Callable[[], Callable[[], str | None]]:
        from runs.screenshots import save_screenshot

        return lambda: lambda: save_screenshot(run.public_id, self.live_view, "jpg")

    def install_timers(self) -> None:
        """Time record_turn and note each push's hand-off, in this process only (the runtime has no timing code)."""
        from channels.layers import get_channel_layer

        from runs import events
        from runtime import record

        original_record_turn = getattr(record, "record_turn")  # noqa: B009  (the name write() looks up at call time)
        original_send = events.pusher.send
        watched = {simulated.run.public_id for simulated in self.runs if simulated.watched}

        def timed_record_turn(*args: Any, **kwargs: Any) -> None:
            started = time.perf_counter()
            original_record_turn(*args, **kwargs)
            elapsed = (time.perf_counter() - started) * 1000
            with self.lock:
                self.tally.write_ms.append(elapsed)

        def stamped_send(messages: list[tuple[str, dict[str, Any]]]) -> None:
            now = time.time()
            self.pushes_handed += len(messages)
            for group, message in messages:
                run_id = group.removeprefix("run.")
                if message.get("type") == "run.event" and run_id in watched:
                    with self.lock:
                        self.tally.pushed[f"{run_id} {message['event']['seq']}"] = now
            original_send(messages)

        layer = get_channel_layer()
        original_group_send = layer.group_send

        async def timed_group_send(group: str, message: dict[str, Any]) -> None:
            started = time.time()
            try:
                await original_group_send(group, message)
            finally:
                self.pushes_sent += 1
            ended = time.time()
            run_id = group.removeprefix("run.")
            with self.lock:
                self.tally.group_send_ms.append((ended - started) * 1000)
                if message.get("type") == "run.event" and run_id in watched:
                    key = f"{run_id} {message['event']['seq']}"
                    self.tally.sending[key], self.tally.sent[key] = started, ended

        setattr(record, "record_turn", timed_record_turn)  # noqa: B010  (timed in place, for this process only)
        events.pusher.send = stamped_send  # type: ignore[method-assign]  # stamped in place, for this process only
        layer.group_send = timed_group_send  # the push loop looks it up on the layer at each send

    def turn(self, simulated: SimulatedRun) -> None:
        """Build one turn as the loop does (its reply, events and live-view image) and hand it to the run's lane."""
        from django.utils import timezone

        from runs.usage import Answered

        record = simulated.record
        simulated.turns += 1
        turn = simulated.turns
        record.reply(Answered("agent", simulated.run.model, dict(USAGE), timezone.now()), [])
        record.event("agent.message", {"text": self.message, "turn": turn, "source": "thinking"})
        use_id = f"toolu_{simulated.run.pk}_{turn}"
        record.event(
            "agent.tool_use",
            {"id": use_id, "name": "read_page", "toolset": "browser", "input": {"filter": "all"}, "turn": turn},
        )
        result = {
            "tool_use_id": use_id,
            "name": "read_page",
            "content": self.texts[turn % len(self.texts)],
            "notices": [],
            "is_error": False,
            "screenshot_url": None,
            "url": "https://shop.example/listing?page=2",
            "turn": turn,
        }
        record.event("agent.tool_result", result)
        record.live_view_for = result
        handed = time.perf_counter()
        record.hand_off(self.checkpoint(turn, use_id, str(result["content"])))
        record.also(lambda: self.committed(handed))
        with self.lock:
            self.tally.handed_off += 1

    def checkpoint(self, turn: int, use_id: str, text: str) -> Any:
        """The checkpoint the loop takes with each turn (runtime.checkpoint): the turn's assistant message and the
        results after it, as JSON text, and the loop's state; the lane seals the browser state with it."""
        import json

        from runtime.checkpoint import Taken

        messages = [
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": self.message, "signature": "s" * 200},
                {"type": "tool_use", "id": use_id, "name": "read_page", "input": {"filter": "all"}},
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": text}]},
        ]  # fmt: skip
        state = {"replies": turn, "pauses": 0, "max_tokens": 16000, "phase": "WORKING", "verdict": {"turns": turn}}
        return Taken(turn=turn, first_message=2 * turn - 1, messages=json.dumps(messages), loop_state=state, url="")

    def committed(self, handed: float) -> None:
        elapsed = (time.perf_counter() - handed) * 1000
        with self.lock:
            self.tally.committed += 1
            self.tally.commit_ms.append(elapsed)

    def run_phase(self, interval: float, duration: float) -> DriverTally:
        """Every run hands off a turn every `interval` seconds (0: as soon as its lane takes it) for `duration`."""
        self.tally = DriverTally()
        started = time.monotonic()
        deadline = started + duration
        schedulers = [
            threading.Thread(target=self.schedule, args=(index, interval, started, deadline), name=f"loop-{index}")
            for index in range(len(self.lanes))
        ]
        heartbeats = threading.Thread(target=self.beat, args=(started, deadline), name="heartbeats")
        for thread in [*schedulers, heartbeats]:
            thread.start()
        for thread in [*schedulers, heartbeats]:
            thread.join()
        for lane in self.lanes:
            lane.flush()
        self.tally.push_drain_s = self.drain_pushes()
        return self.tally

    def beat(self, started: float, deadline: float) -> None:
        """The runs' heartbeats while they wait on the model or the browser, as a worker process's one heartbeat
        writer beats them (runtime.heartbeats): one statement for all of this driver's runs, every interval."""
        from runs import lifecycle
        from runtime.heartbeats import interval

        claims = [(run.run.pk, run.run.handovers) for run in self.runs]
        when = started + interval()
        while when < deadline:
            time.sleep(max(0.0, when - time.monotonic()))
            self.heartbeat_lane.submit(partial(lifecycle.heartbeats, claims))
            self.tally.heartbeats += 1
            when += interval()
        self.heartbeat_lane.flush()

    def drain_pushes(self, limit: float = 120.0) -> float:
        """Wait until the push loop has sent every message handed to it (a loop that falls behind shows here)."""
        started = time.monotonic()
        while self.pushes_sent < self.pushes_handed and time.monotonic() - started < limit:
            time.sleep(0.05)
        return time.monotonic() - started

    def schedule(self, lane_index: int, interval: float, started: float, deadline: float) -> None:
        mine = self.runs[lane_index :: len(self.lanes)]
        # the runs' turns spread over the first interval: runs started at different times
        due = [(started + interval * index / max(len(mine), 1), index) for index in range(len(mine))]
        heapq.heapify(due)
        while due:
            when, index = heapq.heappop(due)
            now = time.monotonic()
            if when >= deadline or now >= deadline:
                return
            if when > now:
                time.sleep(when - now)
            self.tally.late_ms.append(max(0.0, time.monotonic() - when) * 1000)
            self.turn(mine[index])  # waits while the lane holds LANE_CAPACITY jobs: the worker's back-pressure
            heapq.heappush(due, (when + interval if interval > 0 else time.monotonic(), index))

    def close(self) -> None:
        for lane in [*self.lanes, self.heartbeat_lane]:
            lane.close()


def drive(args: argparse.Namespace) -> None:
    """A driver process: set up, say ready, then run each phase the coordinator asks for on stdin."""
    os.environ["PGAPPNAME"] = APPLICATION_NAME
    quiet_django()
    spec = json.loads(Path(args.spec).read_text())
    driver = Driver(spec["runs"], set(spec["watched"]), spec["lanes"])
    say({"ready": os.getpid()})
    for line in sys.stdin:
        command = json.loads(line)
        if command["phase"] == "quit":
            break
        before = resource.getrusage(resource.RUSAGE_SELF)
        tally = driver.run_phase(command["interval"], command["duration"])
        after = resource.getrusage(resource.RUSAGE_SELF)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        say({"tally": tally.__dict__, "cpu_s": cpu})
    driver.close()


def say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def quiet_django() -> None:
    import logging

    from _common import setup_django

    setup_django()
    logging.disable(logging.WARNING)


# --- the receiver: the web's live sockets --------------------------------------------------------------------------


def receive(args: argparse.Namespace) -> None:
    """A receiver process: one channel per watched run's group and per workspace's group, as the consumers add."""
    quiet_django()
    spec = json.loads(Path(args.spec).read_text())
    asyncio.run(receive_until_told(spec["watched"], spec["workspaces"]))


async def receive_until_told(watched: list[str], workspaces: list[int]) -> None:
    from channels.layers import get_channel_layer

    from runs.events import run_group, workspace_group

    layer = get_channel_layer()
    arrived: list[tuple[str, int, float]] = []
    row_changes = 0

    async def watch(run_id: str, channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            arrived.append((run_id, message["event"]["seq"], time.time()))

    async def watch_list(channel: str) -> None:
        nonlocal row_changes
        while True:
            await layer.receive(channel)
            row_changes += 1

    tasks = []
    for run_id in watched:
        channel = await layer.new_channel()
        await layer.group_add(run_group(run_id), channel)
        tasks.append(asyncio.create_task(watch(run_id, channel)))
    for workspace_id in workspaces:
        channel = await layer.new_channel()
        await layer.group_add(workspace_group(workspace_id), channel)
        tasks.append(asyncio.create_task(watch_list(channel)))
    say({"ready": os.getpid()})
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "stop"
    await asyncio.sleep(1.0)  # the last pushes in flight
    for task in tasks:
        task.cancel()
    say({"arrived": arrived, "row_changes": row_changes})


# --- the coordinator: runs, processes, the counters around each phase ------------------------------------------------


@dataclass
class Counters:
    """The machine's counters at one instant: PostgreSQL's, Redis's and the CPU time of each process we watch."""

    at: float
    database: dict[str, int]
    other_rows: dict[str, int]  # rows written in each other database of the cluster (shared PostgreSQL)
    wal_lsn: str
    redis: dict[str, int]
    cpu_s: dict[str, float]


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of one process, from /proc (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


class Machine:
    """Reads the counters: our database's in pg_stat_database, the WAL position, Redis INFO, /proc. On SQLite (the
    embedded default, which the test suite also runs on) there is no server to read: Redis and /proc only."""

    def __init__(self, driver_pids: list[int], receiver_pid: int) -> None:
        import redis
        from django.conf import settings
        from django.db import connection

        self.connection = connection
        self.redis = redis.Redis.from_url(settings.REDIS_URL)
        self.redis_pid = int(self.redis.info("server")["process_id"])
        self.postgresql = connection.vendor == "postgresql"
        self.groups = {"drivers (worker side)": driver_pids, "receiver (web side)": [receiver_pid]}
        if self.postgresql:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [APPLICATION_NAME])
                self.groups["PostgreSQL, our backends"] = [row[0] for row in cursor.fetchall()]
                cursor.execute("SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend'")
                self.groups["PostgreSQL, background (WAL writer, checkpointer...)"] = [r[0] for r in cursor.fetchall()]
        self.groups["Redis"] = [self.redis_pid]

    def read(self) -> Counters:
        database: dict[str, int] = {}
        other_rows: dict[str, int] = {}
        wal_lsn = ""
        if self.postgresql:
            database, other_rows, wal_lsn = self.read_postgresql()
        info = self.redis.info("stats")
        redis_counters = {
            "commands": int(info["total_commands_processed"]),
            "bytes_in": int(info["total_net_input_bytes"]),
            "bytes_out": int(info["total_net_output_bytes"]),
        }
        cpu = {name: sum(process_cpu_s(pid) for pid in pids) for name, pids in self.groups.items()}
        return Counters(time.monotonic(), database, other_rows, wal_lsn, redis_counters, cpu)

    def read_postgresql(self) -> tuple[dict[str, int], dict[str, int], str]:
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT xact_commit, tup_inserted, tup_updated, tup_deleted, blks_read, blks_hit "
                "FROM pg_stat_database WHERE datname = current_database()"
            )
            names = ["commits", "inserted", "updated", "deleted", "blocks_read", "blocks_hit"]
            database = dict(zip(names, cursor.fetchone(), strict=True))
            cursor.execute(
                "SELECT datname, tup_inserted + tup_updated + tup_deleted FROM pg_stat_database "
                "WHERE datname <> current_database() AND datname IS NOT NULL"
            )
            other_rows = {name: int(rows) for name, rows in cursor.fetchall()}
            cursor.execute("SELECT pg_current_wal_lsn()::text")
            wal_lsn: str = cursor.fetchone()[0]
        return database, other_rows, wal_lsn

    def idle(self, seconds: float) -> Delta:
        """The counters' rates over `seconds` while this script's processes are idle."""
        time.sleep(STATS_FLUSH_SECONDS)
        before = self.read()
        time.sleep(seconds)
        return delta(self, before, self.read())

    def wal_bytes(self, start: str, end: str) -> int:
        if not self.postgresql:
            return 0
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)", [end, start])
            return int(cursor.fetchone()[0])


@dataclass
class Delta:
    """What changed between two readings, per second of the window."""

    seconds: float
    database: dict[str, float]
    other_rows: float
    wal: float
    redis: dict[str, float]
    cpu: dict[str, float]


def delta(machine: Machine, before: Counters, after: Counters) -> Delta:
    seconds = after.at - before.at
    return Delta(
        seconds,
        {key: (after.database[key] - before.database[key]) / seconds for key in before.database},
        # databases created or dropped meanwhile (other people's test databases) are left out
        sum(
            max(0, rows - before.other_rows[name])
            for name, rows in after.other_rows.items()
            if name in before.other_rows
        )
        / seconds,
        machine.wal_bytes(before.wal_lsn, after.wal_lsn) / seconds,
        {key: (after.redis[key] - before.redis[key]) / seconds for key in before.redis},
        {key: (after.cpu_s[key] - before.cpu_s[key]) / seconds for key in before.cpu_s},
    )


def create_runs(count: int, workspaces: int) -> tuple[list[Run], list[int]]:
    """Running runs spread over new workspaces (the workspace limit's default is 20 concurrent runs each)."""
    from django.conf import settings
    from django.utils import timezone

    from agent_platform.models import Workspace
    from runs.models import Run, Session

    stamp = time.strftime("%Y%m%d%H%M%S")
    spaces = [
        Workspace.objects.create(slug=f"turn-load-{stamp}-{index}", name=f"Turn load {index}")
        for index in range(workspaces)
    ]
    now = timezone.now()
    sessions = Session.objects.bulk_create([Session(workspace=spaces[index % workspaces]) for index in range(count)])
    runs = Run.objects.bulk_create(
        [
            Run(
                workspace=session.workspace,
                session=session,
                task="Find the cheapest casserole on the shop and report its price.",
                model=settings.DEFAULT_MODEL,
                status=Run.Status.RUNNING,
                admitted_at=now,
                started_at=now,
                heartbeat_at=now,
                worker="turn-load@local",
            )
            for session in sessions
        ]
    )
    return runs, [space.pk for space in spaces]


@contextmanager
def child(command: str, spec: dict[str, Any], env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], IO[str]]]:
    """This script as a driver or receiver subprocess, its spec in a file; yields the process and its stdout."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="turn-load-", delete=False) as handle:
        json.dump(spec, handle)
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__)), command, "--spec", handle.name],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None  # stdout=PIPE
        yield process, process.stdout
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
        Path(handle.name).unlink(missing_ok=True)


def expect(stdout: IO[str], key: str) -> Any:
    line = stdout.readline()
    if not line:
        raise SystemExit(f"a child process ended before sending {key!r}")
    message = json.loads(line)
    if key not in message:
        raise SystemExit(f"expected {key!r} from a child process, got {line[:200]!r}")
    return message[key]


def tell(process: subprocess.Popen[str], message: dict[str, Any]) -> None:
    assert process.stdin is not None  # stdin=PIPE
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()


@dataclass
class Phase:
    name: str
    interval: float
    duration: float
    tally: DriverTally = field(default_factory=DriverTally)  # the drivers' tallies merged
    usage: Delta | None = None  # our window, background subtracted
    load: str = ""

    @property
    def turns(self) -> int:
        return self.tally.committed

    def add(self, result: dict[str, Any]) -> None:
        for name, value in result.items():
            mine = getattr(self.tally, name)
            if name == "push_drain_s":
                setattr(self.tally, name, max(mine, value))
            else:
                setattr(self.tally, name, mine | value if isinstance(mine, dict) else mine + value)


def mean_of(first: Delta, second: Delta) -> Delta:
    def mean(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        return {key: (a[key] + b[key]) / 2 for key in a}

    return Delta(
        first.seconds + second.seconds,
        mean(first.database, second.database),
        (first.other_rows + second.other_rows) / 2,
        (first.wal + second.wal) / 2,
        mean(first.redis, second.redis),
        mean(first.cpu, second.cpu),
    )


def subtract(window: Delta, quiet: Delta) -> Delta:
    """Our part of a window: what the quiet window before it measured of everyone else, taken off (never below 0)."""
    return Delta(
        window.seconds,
        window.database,  # our database's counters are ours alone
        window.other_rows,
        window.wal,  # the whole cluster's: other databases' writes come in bursts, which a quiet window does not predict
        {key: max(0.0, value - quiet.redis[key]) for key, value in window.redis.items()},
        {
            key: value
            if "our backends" in key or "drivers" in key or "receiver" in key
            else max(0.0, value - quiet.cpu[key])
            for key, value in window.cpu.items()
        },
    )


def coordinate(args: argparse.Namespace) -> dict[str, Any]:
    own_media = "MEDIA_ROOT" not in os.environ  # the live-view images go to a folder of this run's, removed after
    if own_media:
        os.environ["MEDIA_ROOT"] = tempfile.mkdtemp(prefix="pilothouse-turn-load-media-")
    quiet_django()
    from django.conf import settings

    from runs.models import Run

    print(header("Turn load"))
    runs, workspaces = create_runs(args.runs, args.workspaces)
    watched = [run for index, run in enumerate(runs) if index % args.sample_every == 0]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    phases = [Phase("steady", args.interval, args.duration)]
    if args.saturate > 0:
        phases.append(Phase("saturate", 0.0, args.saturate))
    arrived: list[tuple[str, int, float]] = []
    share = [runs[index :: args.processes] for index in range(args.processes)]
    with child("receive", {"watched": [r.public_id for r in watched], "workspaces": workspaces}, env) as receiver:
        receiver_pid = expect(receiver[1], "ready")
        with (
            _drivers(share, {r.pk for r in watched}, args.lanes, env) as drivers,
            ConnectionPeak(APPLICATION_NAME) as connections,
        ):
            driver_pids = [expect(stdout, "ready") for _process, stdout in drivers]
            machine = Machine(driver_pids, receiver_pid)
            quiet_before = machine.idle(args.quiet_seconds)
            # Each run's first turn is not measured: the first pushes open the layer's connections, the first image its
            # run's folder.
            for process, _stdout in drivers:
                tell(process, {"phase": "warm-up", "interval": args.interval, "duration": args.interval})
            warm_up_turns = sum(expect(stdout, "tally")["committed"] for _process, stdout in drivers)
            for phase in phases:
                time.sleep(STATS_FLUSH_SECONDS)
                before = machine.read()
                phase.load = load_average()
                for process, _stdout in drivers:
                    tell(process, {"phase": phase.name, "interval": phase.interval, "duration": phase.duration})
                results = [expect(stdout, "tally") for _process, stdout in drivers]
                time.sleep(STATS_FLUSH_SECONDS)
                after = machine.read()
                phase.load += " -> " + load_average()
                phase.usage = delta(machine, before, after)
                for result in results:
                    phase.add(result)
                print(f"{phase.name}: {phase.turns:,} turns in {phase.usage.seconds:.1f} s", file=sys.stderr)
            # Everyone else's use of the shared PostgreSQL and Redis: the mean of the idle windows around the phases.
            quiet = mean_of(quiet_before, machine.idle(args.quiet_seconds))
            for phase in phases:
                assert phase.usage is not None
                phase.usage = subtract(phase.usage, quiet)
            for process, _stdout in drivers:
                tell(process, {"phase": "quit"})
        tell(receiver[0], {"stop": True})
        final = expect(receiver[1], "arrived")
        arrived = [(run_id, seq, at) for run_id, seq, at in final]
    report = summarize(args, phases, arrived, runs, watched)
    report["checks"] = check(runs, watched, arrived, warm_up_turns + sum(phase.turns for phase in phases))
    report["connections"] = connection_check(connections.peak, args.processes, report["checks"]["problems"])
    report["machine"] = {"load_average_end": load_average(), "media_root_bytes": media_bytes(settings.MEDIA_ROOT)}
    if not args.keep:
        from agent_platform.models import Workspace

        Run.objects.filter(pk__in=[run.pk for run in runs]).update(status=Run.Status.SUCCEEDED)
        Workspace.objects.filter(pk__in=workspaces).delete()
        folder = Path(settings.MEDIA_ROOT)
        shutil.rmtree(folder if own_media else folder / "screenshots", ignore_errors=True)
    return report


@contextmanager
def _drivers(
    share: list[list[Run]], watched: set[int], lanes: int, env: dict[str, str]
) -> Iterator[list[tuple[subprocess.Popen[str], IO[str]]]]:
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield [
            stack.enter_context(
                child("drive", {"runs": [r.pk for r in runs], "watched": sorted(watched), "lanes": lanes}, env)
            )
            for runs in share
        ]


def media_bytes(root: str | Path) -> int:
    return sum(path.stat().st_size for path in Path(root, "screenshots").rglob("*") if path.is_file())


def summarize(
    args: argparse.Namespace,
    phases: list[Phase],
    arrived: list[tuple[str, int, float]],
    runs: list[Run],
    watched: list[Run],
) -> dict[str, Any]:
    received = {f"{run_id} {seq}": at for run_id, seq, at in arrived}
    rows = []
    push_rows = []
    per_turn_rows = []
    summary: dict[str, Any] = {
        "runs": [run.public_id for run in runs],
        "watched": [run.public_id for run in watched],
        "phases": {},
    }
    for phase in phases:
        usage = phase.usage
        assert usage is not None
        rate = phase.turns / phase.duration  # turns handed off in the phase (each committed before it ended)
        turns = max(phase.turns, 1)

        def per_turn_of(per_second: float, turns: int = turns, seconds: float = usage.seconds) -> float:
            return per_second * seconds / turns

        tally = phase.tally
        delivery = [(received[key] - at) * 1000 for key, at in tally.pushed.items() if key in received]
        # where a push's time goes: waiting for the process's push loop, the group_send, then Redis to the receiver
        waiting = [(tally.sending[key] - at) * 1000 for key, at in tally.pushed.items() if key in tally.sending]
        sent_to_received = [(received[key] - at) * 1000 for key, at in tally.sent.items() if key in received]
        push_rows.append(
            [
                phase.name,
                len(delivery),
                stats(delivery)["median"],
                stats(delivery)["p95"],
                stats(waiting)["median"],
                stats(waiting)["p95"],
                stats(tally.group_send_ms)["median"],
                stats(tally.group_send_ms)["p95"],
                stats(sent_to_received)["median"],
                stats(sent_to_received)["p95"],
                tally.push_drain_s,
            ]
        )
        offered = len(runs) / phase.interval if phase.interval > 0 else float("nan")
        rows.append(
            [
                phase.name,
                offered,
                rate,
                phase.turns,
                stats(tally.commit_ms)["median"],
                stats(tally.commit_ms)["p95"],
                stats(tally.write_ms)["median"],
                stats(tally.write_ms)["p95"],
                percentile(tally.late_ms, 0.95) if phase.interval > 0 else float("nan"),
                phase.load,
            ]
        )
        cpu = usage.cpu
        per_turn: dict[str, float] = {}
        if usage.database:  # PostgreSQL's counters
            per_turn |= {
                "PostgreSQL commits": per_turn_of(usage.database["commits"]),
                "PostgreSQL rows inserted": per_turn_of(usage.database["inserted"]),
                "PostgreSQL rows updated": per_turn_of(usage.database["updated"]),
                "PostgreSQL WAL bytes (whole cluster: an upper bound)": per_turn_of(usage.wal),
                "PostgreSQL CPU ms, our backends": per_turn_of(cpu["PostgreSQL, our backends"]) * 1000,
                "PostgreSQL CPU ms, background": per_turn_of(
                    cpu["PostgreSQL, background (WAL writer, checkpointer...)"]
                )
                * 1000,
            }
        per_turn |= {
            "Redis commands": per_turn_of(usage.redis["commands"]),
            "Redis bytes in": per_turn_of(usage.redis["bytes_in"]),
            "Redis bytes out": per_turn_of(usage.redis["bytes_out"]),
            "Redis CPU ms": per_turn_of(cpu["Redis"]) * 1000,
            "worker CPU ms (drivers)": per_turn_of(cpu["drivers (worker side)"]) * 1000,
            "web CPU ms (receiver, watched runs only)": per_turn_of(cpu["receiver (web side)"]) * 1000,
            "live-view image bytes (storage)": float(LIVE_VIEW_BYTES),
        }
        if usage.database:
            per_turn["rows written in other databases meanwhile"] = per_turn_of(usage.other_rows)
        per_turn_rows.append(per_turn)
        summary["phases"][phase.name] = {
            "turns": phase.turns,
            "seconds": usage.seconds,
            "turns_per_s": rate,
            "commit_ms": stats(tally.commit_ms),
            "write_ms": stats(tally.write_ms),
            "delivery_ms": stats(delivery),
            "push_wait_ms": stats(waiting),
            "group_send_ms": stats(tally.group_send_ms),
            "push_drain_s": tally.push_drain_s,
            "pushes_stamped": len(tally.pushed),
            "pushes_delivered": len(delivery),
            "per_turn": per_turn,
            "cpu_cores": usage.cpu,
            "other_databases_rows_per_s": usage.other_rows,
            "load": phase.load,
        }
    print(
        f"{len(runs):,} runs in {args.workspaces} workspaces, {args.processes} driver processes x {args.lanes} lanes, "
        f"{len(watched)} runs watched live; a turn every {args.interval:g} s per run in the steady phase\n"
    )
    print(
        table(
            [
                "phase",
                "offered turns/s",
                "turns/s",
                "turns",
                "commit p50 ms",
                "commit p95 ms",
                "record_turn p50 ms",
                "record_turn p95 ms",
                "late p95 ms",
                "load average",
            ],
            rows,
        )
    )
    print()
    print(
        table(
            [
                "phase",
                "pushes watched",
                "commit to viewer p50 ms",
                "p95 ms",
                "waiting for the push loop p50 ms",
                "p95 ms",
                "group_send p50 ms",
                "p95 ms",
                "Redis to viewer p50 ms",
                "p95 ms",
                "push loop behind at the end s",
            ],
            push_rows,
        )
    )
    print()
    names = list(per_turn_rows[0])
    print(
        table(["per turn", *[phase.name for phase in phases]], [[n, *[p[n] for p in per_turn_rows]] for n in names], 2)
    )
    print()
    cores = [[name, *[summary["phases"][p.name]["cpu_cores"][name] for p in phases]] for name in phases[0].usage.cpu]  # type: ignore[union-attr]
    print(table(["CPU cores busy", *[phase.name for phase in phases]], cores, 2))
    print()
    print(saturation(summary))
    return summary


def saturation(summary: dict[str, Any]) -> str:
    """What saturates first on this machine: the component with the most CPU per turn sets the rate of a core each."""
    phase = summary["phases"].get("saturate") or summary["phases"]["steady"]
    per_turn = phase["per_turn"]
    cpu = {
        "the worker's Python (record + push)": per_turn["worker CPU ms (drivers)"],
        "Redis": per_turn["Redis CPU ms"],
    }
    if "PostgreSQL CPU ms, our backends" in per_turn:
        cpu["PostgreSQL"] = per_turn["PostgreSQL CPU ms, our backends"] + per_turn["PostgreSQL CPU ms, background"]
    lines = ["Turns per second one CPU core carries, by component (1000 ms / CPU ms per turn):"]
    for name, ms in sorted(cpu.items(), key=lambda item: -item[1]):
        lines.append(f"  {name}: {ms:.2f} ms per turn -> {1000 / ms if ms > 0 else float('inf'):,.0f} turns/s per core")
    summary["cpu_ms_per_turn"] = cpu
    return "\n".join(lines)


def check(runs: list[Run], watched: list[Run], arrived: list[tuple[str, int, float]], turns: int) -> dict[str, Any]:
    """Every turn recorded, every run's events gap-free and unique, every push to a watched run received once."""
    from django.db.models import Count, Max, Min

    from agent_platform.models import ModelRequest
    from runs.models import Event, Run

    pks = [run.pk for run in runs]
    problems: list[str] = []
    requests = ModelRequest.objects.filter(run_id__in=pks).count()
    if requests != turns:
        problems.append(f"{requests} model requests recorded for {turns} turns")
    shape = (
        Event.objects.filter(run_id__in=pks).values("run_id").annotate(n=Count("id"), low=Min("seq"), high=Max("seq"))
    )
    last_seq = dict(Run.objects.filter(pk__in=pks).values_list("pk", "last_seq"))
    events = 0
    for row in shape:
        events += row["n"]
        if row["low"] != 1 or row["high"] != row["n"] or last_seq[row["run_id"]] != row["n"]:
            problems.append(f"run {row['run_id']}: {row['n']} events, seq {row['low']}..{row['high']}")
    expected_pushes = Event.objects.filter(run__in=[run.pk for run in watched]).count()
    seen: dict[tuple[str, int], int] = defaultdict(int)
    for run_id, seq, _at in arrived:
        seen[(run_id, seq)] += 1
    duplicates = sum(1 for count in seen.values() if count > 1)
    if duplicates:
        problems.append(f"{duplicates} pushes received more than once")
    if len(seen) != expected_pushes:
        problems.append(f"{len(seen)} pushes received of {expected_pushes} events of the watched runs")
    # what a turn keeps in the database: its events' payloads as JSON and as stored (compressed when large)
    json_bytes, stored_bytes = payload_bytes(pks)
    result = {
        "turns": turns,
        "model_requests": requests,
        "events": events,
        "event_json_bytes_per_turn": int(json_bytes) / max(turns, 1),
        "event_stored_bytes_per_turn": int(stored_bytes) / max(turns, 1),
        "pushes_expected": expected_pushes,
        "pushes_received": len(seen),
        "duplicate_pushes": duplicates,
        "problems": problems[:20],
    }
    print(
        f"\nchecks: {turns:,} turns, {requests:,} model requests, {events:,} events gap-free in "
        f"{len(shape):,} runs; {len(seen):,} of {expected_pushes:,} pushes to watched runs received, "
        f"{duplicates} twice: {'ok' if not problems else 'FAILED: ' + '; '.join(problems[:5])}"
    )
    print(
        f"a turn's events: {result['event_json_bytes_per_turn']:,.0f} bytes of JSON, "
        f"{result['event_stored_bytes_per_turn']:,.0f} bytes as the database stores them"
    )
    return result


def connection_check(peak: int, processes: int, problems: list[str]) -> dict[str, Any]:
    """The drivers' peak of server connections against what their pools allow (DB_POOL_MAX per process)."""
    from django.conf import settings
    from django.db import connection

    pooled = connection.vendor == "postgresql" and bool(connection.settings_dict.get("OPTIONS", {}).get("pool"))
    bound = settings.DB_POOL_MAX * processes if pooled else None
    if bound is not None and peak > bound:
        problems.append(f"{peak} server connections, over the pools' {bound}")
    if connection.vendor == "postgresql":
        print(
            f"peak server connections of the drivers: {peak} "
            + (f"(pools: {settings.DB_POOL_MAX} x {processes} processes = {bound})" if bound else "(no pool)")
        )
    return {"peak": peak, "bound": bound}


def payload_bytes(run_ids: list[int]) -> tuple[int, int]:
    """The runs' event payloads: bytes of JSON, and as PostgreSQL stores them (large ones compressed; SQLite: as JSON)."""
    from django.db import connection

    from runs.models import Event

    if connection.vendor != "postgresql":
        size = sum(
            len(json.dumps(p)) for p in Event.objects.filter(run_id__in=run_ids).values_list("payload", flat=True)
        )
        return size, size
    table_name = connection.ops.quote_name(Event._meta.db_table)
    sizes = "SELECT coalesce(sum(octet_length(payload::text)), 0), coalesce(sum(pg_column_size(payload)), 0)"
    with connection.cursor() as cursor:
        cursor.execute(f"{sizes} FROM {table_name} WHERE run_id = ANY(%s)", [run_ids])
        json_bytes, stored_bytes = cursor.fetchone()
    return int(json_bytes), int(stored_bytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", default="load", choices=["load", "drive", "receive"])
    parser.add_argument("--spec", help="(drive, receive) the JSON file the coordinator wrote")
    parser.add_argument("--runs", type=int, default=1000, help="concurrent simulated runs")
    parser.add_argument("--workspaces", type=int, default=50, help="the runs spread over this many workspaces")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between a run's turns (steady phase)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of the steady phase")
    parser.add_argument("--saturate", type=float, default=30.0, help="seconds of the flat-out phase (0: none)")
    parser.add_argument("--processes", type=int, default=8, help="driver processes (a worker's processes)")
    parser.add_argument("--lanes", type=int, default=8, help="lane threads per driver process (they share its pool)")
    parser.add_argument("--sample-every", type=int, default=10, help="watch every n-th run's live group")
    parser.add_argument(
        "--quiet-seconds", type=float, default=5.0, help="the window before each phase that measures everyone else"
    )
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the runs and workspaces (deleted by default)")
    args = parser.parse_args()
    if args.command == "drive":
        drive(args)
        return
    if args.command == "receive":
        receive(args)
        return
    report = coordinate(args)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    if report["checks"]["problems"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
