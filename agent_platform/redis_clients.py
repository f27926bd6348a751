"""How every Redis client of the platform connects: the Channels layer (websockets and the live pusher), the cache
(rate limits, live-view presence) and Celery's broker.

Each sets its socket timeout, connect timeout and health checks on purpose rather than take redis-py's defaults,
which changed under us once: redis-py 8 made `socket_timeout` 5 s, the same 5 s that channels-redis blocks in
BZPOPMIN waiting for a websocket's next message, so every idle socket's read raced its own timeout and every
websocket dropped every few seconds. The rule here: a blocking read always has a socket timeout well above the
longest block it asks the server for, and never none at all (a half-open connection would then hang forever).

Keys accepted by redis-py's connection classes; TCP keepalive only where there is TCP (a Unix socket's connection
class refuses the option).
"""

from typing import Any
from urllib.parse import urlparse

# Every connection attempt: a Redis that does not accept within this long is down, not slow.
CONNECT_TIMEOUT_SECONDS = 5.0

# channels-redis receives with BZPOPMIN blocking up to 5 s (RedisChannelLayer.brpop_timeout) on the server; the
# reply comes when that ends, so the socket must wait longer than that, with room for a loaded Redis.
CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS = 15.0

# The cache only sends commands Redis answers at once: a request waiting on a rate-limit count or a presence key
# fails quickly instead of hanging.
CACHE_SOCKET_TIMEOUT_SECONDS = 5.0

# kombu's BRPOP blocks 1 s (its brpop_timeout) per poll; publishes answer at once.
BROKER_SOCKET_TIMEOUT_SECONDS = 15.0

# A pooled connection unused this long is PINGed before its next command, so one a restarted Redis (or a NAT)
# dropped is replaced instead of failing that command: the live pusher's connections sit idle between runs.
HEALTH_CHECK_INTERVAL_SECONDS = 25


def _is_tcp(url: str) -> bool:
    return urlparse(url).scheme in ("redis", "rediss")


def connection_options(url: str, socket_timeout: float) -> dict[str, Any]:
    """redis-py connection keyword arguments for one client of `url` (redis://, rediss:// or unix://)."""
    options: dict[str, Any] = {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
        "health_check_interval": HEALTH_CHECK_INTERVAL_SECONDS,
    }
    if _is_tcp(url):
        options["socket_keepalive"] = True
    return options


def channel_layer_host(url: str) -> dict[str, Any]:
    """One entry of CHANNEL_LAYERS' `hosts`: channels-redis builds its pool with ConnectionPool.from_url(address,
    **the other keys)."""
    return {"address": url, **connection_options(url, CHANNEL_LAYER_SOCKET_TIMEOUT_SECONDS)}


def cache_options(url: str) -> dict[str, Any]:
    """Django's RedisCache OPTIONS: passed to ConnectionPool.from_url."""
    return connection_options(url, CACHE_SOCKET_TIMEOUT_SECONDS)


def broker_transport_options(url: str) -> dict[str, Any]:
    """kombu's Redis transport options (it passes them to redis-py, and runs its own checks of its long-lived BRPOP
    and pub/sub connections every `health_check_interval`)."""
    return connection_options(url, BROKER_SOCKET_TIMEOUT_SECONDS)
