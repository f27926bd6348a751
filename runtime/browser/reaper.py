"""Chromium left behind by a killed worker: each worker records its browser processes in a file under
BROWSER_PID_DIR, and a worker that starts kills those of any worker on this machine that is no longer alive.

Playwright starts Chromium in a process group of its own, so a SIGKILLed worker's browsers (and its Playwright
driver) outlive it; a crash loop would pile them up. Every process is identified by pid *and* start time (from
/proc), so a recycled pid is never killed by mistake. Linux only (/proc); elsewhere nothing is recorded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from pathlib import Path

log = logging.getLogger(__name__)

PROC = Path("/proc")


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None if it is gone."""
    try:
        return int((PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def cmdline(pid: int) -> list[bytes]:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def children_of(pid: int) -> list[int]:
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def is_browser(pid: int) -> bool:
    """Chromium's browser process as Playwright starts it (not a renderer, not anything else)."""
    args = cmdline(pid)
    return b"--remote-debugging-pipe" in args and not any(arg.startswith(b"--type=") for arg in args)


def is_driver(pid: int) -> bool:
    return any(b"playwright" in arg for arg in cmdline(pid))


def browser_processes(worker_pid: int) -> list[dict[str, int]]:
    """The worker's Playwright drivers and their Chromium browser processes, each with its start time."""
    found = []
    for driver in children_of(worker_pid):
        if not is_driver(driver):
            continue
        for pid in [driver, *[child for child in children_of(driver) if is_browser(child)]]:
            started = start_time(pid)
            if started is not None:
                found.append({"pid": pid, "start": started, "group": os.getpgid(pid) if is_browser(pid) else 0})
    return found


def record(pid_dir: Path, worker_pid: int | None = None) -> Path | None:
    """Write (or rewrite, after a relaunch) the worker's browser processes to `pid_dir/<worker pid>.json`."""
    if not PROC.is_dir():
        return None
    worker_pid = worker_pid or os.getpid()
    path = pid_dir / f"{worker_pid}.json"
    try:
        pid_dir.mkdir(parents=True, exist_ok=True)
        entry = {"worker": worker_pid, "start": start_time(worker_pid), "processes": browser_processes(worker_pid)}
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(entry))
        temporary.replace(path)
    except OSError:
        log.warning("could not record the browser processes in %s", pid_dir, exc_info=True)
        return None
    return path


def forget(pid_dir: Path, worker_pid: int | None = None) -> None:
    """A worker that closed its browser cleanly leaves nothing to clean up."""
    with contextlib.suppress(OSError):
        (pid_dir / f"{worker_pid or os.getpid()}.json").unlink()


def reap_orphans(pid_dir: Path) -> list[int]:
    """Kill the recorded browsers and drivers of every worker that is gone; returns the pids killed."""
    killed: list[int] = []
    if not pid_dir.is_dir():
        return killed
    for path in sorted(pid_dir.glob("*.json")):
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            path.unlink(missing_ok=True)
            continue
        worker = int(entry.get("worker") or 0)
        if worker and start_time(worker) == entry.get("start"):
            # That worker is alive (this one included, whose warm-up may already have launched its Chromium): its
            # browsers are its own. A record under this pid with another start time is a dead predecessor's.
            continue
        for process in entry.get("processes", []):
            pid = int(process["pid"])
            if start_time(pid) != process.get("start"):
                continue  # gone, or the pid now belongs to another process
            try:
                if process.get("group"):
                    os.killpg(int(process["group"]), signal.SIGKILL)  # the browser and its renderers
                else:
                    os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                continue
        path.unlink(missing_ok=True)
    if killed:
        log.warning("killed %d browser processes left by workers that are gone: %s", len(killed), killed)
    return killed
