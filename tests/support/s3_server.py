"""A real S3-compatible server for the object-storage tests: moto's S3 server (`python -m moto.server`, from PyPI) as
its own process on a free loopback port, with one bucket, and what a process needs in its environment to use it."""

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from tests.support.sites import free_port

# moto imports much of boto on start; with both suites running and coverage measuring each subprocess, that took
# over 30 s on CI's machine. The same bound as the ASGI server's.
START_TIMEOUT_SECONDS = 120
STOP_TIMEOUT_SECONDS = 10
BUCKET = "pilothouse-artifacts"
PREFIX = "tests/run-files"
REGION = "eu-west-1"
# The server takes any key pair; these are ones a test can recognise if they ever showed up where they must not.
ACCESS_KEY_ID = "AKIATESTSTORAGE0001"
SECRET_ACCESS_KEY = "storage-canary-secret-9d41b7e2c0"


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str = BUCKET
    prefix: str = PREFIX

    @property
    def storage_url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def environment(self) -> dict[str, str]:
        """What a web or worker process needs to keep its files in this server's bucket."""
        return {
            "STORAGE_URL": self.storage_url,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
            "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
        }

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
        )

    def keys(self, under: str = "") -> list[str]:
        """Every key in the bucket under the prefix and `under`, without the prefix."""
        listed = self.client().list_objects_v2(Bucket=self.bucket, Prefix=f"{self.prefix}/{under}")
        return sorted(item["Key"].removeprefix(f"{self.prefix}/") for item in listed.get("Contents", []))

    def read(self, key: str) -> bytes:
        body: bytes = self.client().get_object(Bucket=self.bucket, Key=f"{self.prefix}/{key}")["Body"].read()
        return body


def wait_until_serving(process: subprocess.Popen, endpoint: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the S3 server exited early:\n{log_path.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    raise RuntimeError(f"the S3 server did not answer in {START_TIMEOUT_SECONDS}s:\n{log_path.read_text()[-4000:]}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT_SECONDS)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    """The session's S3 server with its bucket created, stopped at the session's end."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("s3-server") / "server.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        server = S3Server(endpoint=f"http://127.0.0.1:{port}")
        wait_until_serving(process, server.endpoint, log_path)
        server.client().create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
        yield server
    finally:
        stop(process)
