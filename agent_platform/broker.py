"""The broker's Redis as the platform checks it: is it reachable now (a launch asks before it creates a run that
needs a message), and has it restarted since a process last looked (its queues, which live only in memory, went
with it).

A restart is noticed with a marker key: Redis forgets every key when it restarts without persistence, the marker
with the queues, so a marker that is missing means the messages of the runs already admitted are gone too. The
first process to find it missing sets it again (SET NX), so of N workers reconnecting at once one redelivers.
"""

import functools
import logging
import secrets

import redis
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import redis_clients
from .errors import ServiceUnavailable

log = logging.getLogger(__name__)

# Redis unreachable (restarting, failing over): what a command raises then.
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError)

# Seconds a client should wait before retrying while Redis is away (a restart takes one or two).
RETRY_AFTER_SECONDS = 2

# In the broker's own database, so a FLUSHDB of that database forgets it with the queues, as a restart does.
MARKER_KEY = "pilothouse:broker-epoch"


@functools.cache
def _client(url: str) -> redis.Redis:
    """One pooled client per URL: the probe and the marker are single commands Redis answers at once."""
    return redis.Redis.from_url(
        url, **redis_clients.connection_options(url, redis_clients.CACHE_SOCKET_TIMEOUT_SECONDS)
    )


def client() -> redis.Redis:
    """The broker's Redis (REDIS_URL, read at call time)."""
    return _client(settings.REDIS_URL)


def reachable() -> bool:
    """True if the broker answers a PING now. A stale pooled connection (Redis restarted since) is retried on a new
    one by redis-py, so a Redis that is back answers True."""
    try:
        return bool(client().ping())
    except UNAVAILABLE:
        return False


def unavailable() -> ServiceUnavailable:
    """The error of a request that needs Redis while it is away: 503 with Retry-After, nothing about where it is."""
    return ServiceUnavailable(
        f"A shared service (Redis) is briefly unavailable; retry after {RETRY_AFTER_SECONDS}s.",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


def restarted() -> bool:
    """True once per broker lifetime, to the first caller that finds the marker missing (a Redis that restarted, or
    one never seen before); it sets the marker again. False while the marker stands, or if Redis cannot answer."""
    try:
        return bool(client().set(MARKER_KEY, secrets.token_hex(8), nx=True))
    except UNAVAILABLE:
        log.warning("the broker's restart marker could not be read: Redis is unreachable")
        return False
