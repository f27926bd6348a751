"""The machine's processes as /proc shows them: parents, process groups, states and command lines (Linux only).

/proc/<pid>/stat is `pid (command) state ppid pgrp ...`; the command may hold spaces and parentheses, so the fields
are read after its last ")"."""

import os
from pathlib import Path
from typing import NamedTuple

PROC = Path("/proc")


class ProcessStat(NamedTuple):
    pid: int
    command: str
    state: str  # "R", "S", "Z" (a zombie, only waiting to be reaped)...
    parent: int
    group: int


def stat(pid: int) -> ProcessStat | None:
    """The process's stat line, or None when it is gone (or unreadable)."""
    try:
        name, rest = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)
        fields = rest.split()
        return ProcessStat(pid, name.split("(", 1)[1], fields[0], int(fields[1]), int(fields[2]))
    except (OSError, IndexError, ValueError):
        return None


def processes() -> list[ProcessStat]:
    """Every process the machine has now."""
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (process := stat(int(entry.name))) is not None:
            found.append(process)
    return found


def alive(pid: int) -> bool:
    """Running or stopped, not gone and not a zombie waiting to be reaped."""
    process = stat(pid)
    return process is not None and process.state != "Z"


def command_line(pid: int) -> list[bytes]:
    """The process's argv (raises OSError when it is gone)."""
    return (PROC / str(pid) / "cmdline").read_bytes().split(b"\0")


def descendants(root: int) -> list[int]:
    """Every process below `root`: children, their children, and so on."""
    children: dict[int, list[int]] = {}
    for process in processes():
        children.setdefault(process.parent, []).append(process.pid)
    found, stack = [], [root]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def group_members(group: int) -> list[str]:
    """`pid state command` of each live process of a process group (zombies, which only wait to be reaped, excluded)."""
    return [
        f"{process.pid} {process.state} {process.command}"
        for process in processes()
        if process.group == group and process.state != "Z"
    ]


def group_alive(group: int) -> bool:
    return bool(group_members(group))


def chromium_pids(root: int) -> list[int]:
    """The browser processes (not their renderers) among the descendants of `root`, as Playwright launches them."""
    found = []
    for pid in descendants(root):
        try:
            cmdline = command_line(pid)
        except OSError:
            continue
        if b"--remote-debugging-pipe" in cmdline and not any(arg.startswith(b"--type=") for arg in cmdline):
            found.append(pid)
    return found


def chromium_main_processes() -> list[int]:
    """Browser (not renderer) processes among this test process's descendants, by their executable's name."""
    found = []
    for pid in descendants(os.getpid()):
        try:
            command = command_line(pid)
        except OSError:
            continue
        # child processes rewrite their argv into one string, so look for --type= anywhere
        if b"chrom" in command[0] and b"--type=" not in b" ".join(command):
            found.append(pid)
    return found


def renderer_pids(root: int) -> list[int]:
    """The renderer processes (one per tab's site) among the descendants of `root`: killing one crashes its tabs."""
    found = []
    for pid in descendants(root):
        try:
            command = command_line(pid)
        except OSError:
            continue
        if b"--type=renderer" in b" ".join(command):
            found.append(pid)
    return found
