"""A pytest plugin for `make test-fast`, which spreads the tests over pytest-xdist's workers (`-n`): each worker gets a
Redis database of its own, as each suite of `make test` does (scripts/parallel_suites.py), so one worker's broker
flush never empties another's queues. pytest-django already gives each worker a test database of its own.

Loaded with `-p` so that it runs before pytest-django reads the settings; xdist names the worker in the environment
before that (PYTEST_XDIST_WORKER: gw0, gw1, ...)."""

import os

from scripts.parallel_suites import next_redis_database

# REDIS_URL's own number and the next are `make test`'s two suites'; the workers take the ones after.
FIRST_WORKER_OFFSET = 2


def worker_redis_url(url: str, worker: str) -> str:
    for _ in range(FIRST_WORKER_OFFSET + int(worker.removeprefix("gw"))):
        url = next_redis_database(url)
    return url


if worker := os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["REDIS_URL"] = worker_redis_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), worker)
