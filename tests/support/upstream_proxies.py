"""Real upstream proxies for the proxies tests, each a subprocess on 127.0.0.1 from a registry package: proxy.py (HTTP
CONNECT, Basic credentials, TLS to the proxy with a certificate) and pproxy (SOCKS5 with RFC 1929 credentials); what
each logged; and two broken ones: a port nobody listens on, and a listener that accepts and never answers."""

import datetime
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.sites import free_port

BIN = Path(sys.executable).parent
HTTP_USER, HTTP_PASSWORD = "alice", "pr0xy-pa55-canary"
SOCKS_USER, SOCKS_PASSWORD = "bob", "s0cks-pa55-canary"


@dataclass
class UpstreamServer:
    """A proxy server subprocess: its port, its log, and the URL that reaches it (credentials included)."""

    process: subprocess.Popen
    port: int
    log_path: Path
    scheme: str
    user: str = ""
    password: str = ""

    def url(self, *, password: str | None = None) -> str:
        secret = self.password if password is None else password
        credentials = f"{self.user}:{secret}@" if self.user else ""
        return f"{self.scheme}://{credentials}127.0.0.1:{self.port}"

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def start(command: list[str], port: int, log_path: Path, scheme: str, user: str, password: str) -> UpstreamServer:
    log = log_path.open("ab")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    server = UpstreamServer(process, port, log_path, scheme, user, password)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{command[0]} exited early:\n{server.log[-3000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server
        except OSError:
            time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"{command[0]} did not listen on {port} within 30 s:\n{server.log[-3000:]}")


def start_proxy_py(directory: Path, *, tls: tuple[Path, Path] | None = None) -> UpstreamServer:
    """proxy.py with Basic credentials; with `tls` (certificate, key) it listens for TLS (an https:// proxy)."""
    port = free_port()
    command = [str(BIN / "proxy"), "--hostname", "127.0.0.1", "--port", str(port), "--num-workers", "1",
               "--num-acceptors", "1", "--basic-auth", f"{HTTP_USER}:{HTTP_PASSWORD}", "--log-level", "INFO"]  # fmt: skip
    scheme = "http"
    if tls is not None:
        command += ["--cert-file", str(tls[0]), "--key-file", str(tls[1])]
        scheme = "https"
    return start(command, port, directory / f"proxy-py-{port}.log", scheme, HTTP_USER, HTTP_PASSWORD)


def start_pproxy(directory: Path) -> UpstreamServer:
    """pproxy as a SOCKS5 server with credentials (`--auth 0`: asked on every connection, not remembered per IP)."""
    port = free_port()
    command = [str(BIN / "pproxy"), "-l", f"socks5://127.0.0.1:{port}#{SOCKS_USER}:{SOCKS_PASSWORD}", "-v",
               "--auth", "0"]  # fmt: skip
    return start(command, port, directory / f"pproxy-{port}.log", "socks5", SOCKS_USER, SOCKS_PASSWORD)


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key; trusting it is the test's business (SSL_CERT_FILE)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "proxy-cert.pem", directory / "proxy-key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def silent_listener() -> Iterator[int]:
    """A port that accepts connections and never says a word: a proxy that hangs in its handshake."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    for connection in held:
        connection.close()
    server.close()
