"""Hosts on one machine: each a network namespace of its own (`ip netns`), joined to the others by a veth pair on a
bridge in the root namespace, on a private /24 of the test's. A host's processes are started with
`ip netns exec NS ...`; they see only its loopback and its address, so a server bound to that address is reachable
from the other hosts and from the test (on the bridge's address, `.1`) and from nowhere else. No host has a default
route: nothing in them reaches beyond the test's own addresses.

Names carry the test process's id (interface names are at most 15 characters), so two sessions on one machine never
meet. `Network.close` stops every process in every namespace and deletes the namespaces, the veths and the bridge;
the fixtures call it from their finalizers, whatever the test did. What a session killed before its finalizers left
behind (its pid is in every name) is swept by the next `Network`.
"""

import ipaddress
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

from tests.support.paths import REPO

# 10.77.N.0/24 for some N no address of this machine is in (several sessions may each hold one).
SUBNET_FIRST_OCTETS = "10.77"
COMMAND_TIMEOUT_SECONDS = 30
STOP_TIMEOUT_SECONDS = 15
_networks = count(1)


def ip(*args: str, namespace: str | None = None) -> str:
    """`ip ARGS` (inside `namespace` when given); its output, or the test fails with ip's own message."""
    command = ["ip", "netns", "exec", namespace, "ip", *args] if namespace else ["ip", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def require_root() -> None:
    """Namespaces and bridges need root (CI runs the suite as root): say so plainly rather than in ip's words."""
    if os.geteuid() != 0:
        raise RuntimeError(
            "the multi-host tests create network namespaces and a bridge (`ip netns`, veth): run the suite as root"
        )


def free_subnet() -> ipaddress.IPv4Network:
    """A 10.77.N.0/24 that no address of this machine is in, starting from an N picked by the pid."""
    in_use = [
        ipaddress.ip_interface(line.split()[3]).network
        for line in ip("-4", "-o", "addr", "show").splitlines()
        if len(line.split()) > 3
    ]
    start = os.getpid() % 250
    for offset in range(250):
        subnet = ipaddress.IPv4Network(f"{SUBNET_FIRST_OCTETS}.{(start + offset) % 250 + 1}.0/24")
        if not any(subnet.overlaps(network) for network in in_use):
            return subnet
    raise RuntimeError(f"no free /24 under {SUBNET_FIRST_OCTETS}.0.0/16 on this machine")


@dataclass
class Host:
    """One machine of the test: a network namespace with one interface (eth0) on the test's network."""

    role: str
    namespace: str
    address: str
    directory: Path
    processes: list[subprocess.Popen] = field(default_factory=list)

    def launcher(self) -> tuple[str, ...]:
        """The prefix that runs a command on this host (ip execs the command: its pid is the command's)."""
        return ("ip", "netns", "exec", self.namespace)

    def start(self, args: Sequence[str], *, env: dict[str, str], log_name: str) -> subprocess.Popen:
        """A long-running process on this host, its output in `log_name` under the host's directory."""
        with open(self.directory / log_name, "ab") as log:
            process = subprocess.Popen(
                [*self.launcher(), *args], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.processes.append(process)
        return process

    def run(self, args: Sequence[str], *, env: dict[str, str], timeout: float = 240) -> str:
        """A command on this host to its end; its stdout, or the test fails with its output."""
        done = subprocess.run(
            [*self.launcher(), *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} on {self.role} failed ({done.returncode}):\n{done.stderr[-4000:]}")
        return done.stdout

    def log(self, log_name: str) -> str:
        path = self.directory / log_name
        return path.read_text(errors="replace") if path.exists() else ""

    def pids(self) -> list[int]:
        """Every process in this host's namespace, whoever started it (a worker's Chromium too)."""
        listed = subprocess.run(
            ["ip", "netns", "pids", self.namespace], capture_output=True, text=True, timeout=10, check=False
        )
        return [int(pid) for pid in listed.stdout.split()]

    def kill_everything(self) -> None:
        """The host dies at once: SIGKILL to every process in its namespace (`ip netns pids NS | xargs kill -9`)."""
        self.signal_everything(signal.SIGKILL)
        self.wait_empty(STOP_TIMEOUT_SECONDS)

    def stop(self) -> None:
        """SIGTERM to every process (so Python ones save their coverage and servers close cleanly), then SIGKILL to
        what is left after the timeout."""
        self.signal_everything(signal.SIGTERM)
        if not self.wait_empty(STOP_TIMEOUT_SECONDS):
            self.kill_everything()

    def signal_everything(self, signum: int) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def wait_empty(self, timeout: float) -> bool:
        """Reap this host's processes started here; True once no process is left in the namespace."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for process in self.processes:
                process.poll()
            if not self.pids():
                return True
            time.sleep(0.1)
        return False


def pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def sweep_leftovers() -> None:
    """Remove what a test session killed before its finalizers ran (CI's timeout, a SIGKILL) left: the namespaces and
    bridges named after a process that no longer exists, with whatever still runs in those namespaces."""
    for line in ip("netns", "list").splitlines():
        name = line.split()[0] if line.split() else ""
        match = re.match(r"pilothouse-(\d+)x\d+-", name)
        if match and not pid_alive(int(match.group(1))):
            leftover = Host("leftover", name, "", Path("/"))
            leftover.kill_everything()
            ip("netns", "delete", name)
    for line in ip("-o", "link", "show", "type", "bridge").splitlines():
        match = re.match(r"\d+: (phb(\d+)x\d+)[:@]", line)
        if match and not pid_alive(int(match.group(2))):
            ip("link", "delete", match.group(1))


class Network:
    """The test's network: a bridge in the root namespace holding the subnet's first address, and its hosts."""

    def __init__(self, directory: Path) -> None:
        require_root()
        sweep_leftovers()
        self.directory = directory
        self.tag = f"{os.getpid()}x{next(_networks)}"
        self.subnet = free_subnet()
        addresses = self.subnet.hosts()
        self.gateway = str(next(addresses))  # the root namespace's side: the test process, its stub and site
        self.free_addresses = addresses
        self.bridge = f"phb{self.tag}"
        self.hosts: list[Host] = []
        self.host_numbers = count(1)
        ip("link", "add", self.bridge, "type", "bridge", "forward_delay", "0")
        try:
            ip("addr", "add", f"{self.gateway}/{self.subnet.prefixlen}", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
        except RuntimeError:
            ip("link", "delete", self.bridge)
            raise

    def add_host(self, role: str) -> Host:
        """A new namespace on the bridge with the next free address, and a new directory for its logs and data."""
        number = next(self.host_numbers)  # never reused: a host removed leaves its name and folder to no other
        namespace = f"pilothouse-{self.tag}-{role}-{number}"
        veth = f"phv{self.tag}h{number}"
        address = str(next(self.free_addresses))
        directory = self.directory / f"{role}-{number}"
        directory.mkdir(parents=True)
        directory.chmod(0o755)  # a host's service may run as another user (PostgreSQL as postgres)
        host = Host(role, namespace, address, directory)
        ip("netns", "add", namespace)
        self.hosts.append(host)  # from here on close() removes it
        ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        ip("link", "set", veth, "master", self.bridge)
        ip("link", "set", veth, "up")
        ip("link", "set", "lo", "up", namespace=namespace)
        ip("addr", "add", f"{address}/{self.subnet.prefixlen}", "dev", "eth0", namespace=namespace)
        ip("link", "set", "eth0", "up", namespace=namespace)
        return host

    def remove_host(self, host: Host) -> None:
        """Stop the host's processes and delete its namespace (its veth goes with it)."""
        try:
            host.stop()
        finally:
            ip("netns", "delete", host.namespace)
            self.hosts.remove(host)

    def close(self) -> None:
        """Stop every process of every host (in reverse order: workers and web before the services they use), then
        delete the namespaces (their veth ends go with them) and the bridge. Errors are collected, not raised midway,
        so one failure does not leave the rest behind."""
        problems: list[str] = []
        for host in reversed(self.hosts):
            try:
                host.stop()
            except Exception as error:  # cleanup goes on; the error is raised below
                problems.append(f"stopping {host.role}: {error!r}")
        for host in reversed(self.hosts):
            try:
                ip("netns", "delete", host.namespace)
            except RuntimeError as error:
                problems.append(str(error))
        try:
            ip("link", "delete", self.bridge)
        except RuntimeError as error:
            problems.append(str(error))
        if problems:
            raise RuntimeError("the test network was not torn down cleanly:\n" + "\n".join(problems))
