"""Which webhook addresses may be called: the browser's egress policy (public addresses, or the allowed private hosts)."""

import asyncio
import concurrent.futures
from urllib.parse import urlsplit

from django.conf import settings

from agent_platform.netpolicy import NetworkPolicy


def address_refusal(url: str) -> str | None:
    """Why a webhook may not be sent to `url`, or None. Decided before any connection is made.

    The browser's address policy (agent_platform.netpolicy): the same address classes are refused (loopback, private,
    link-local, cloud metadata...), and the same BROWSER_ALLOWED_PRIVATE_HOSTS re-open private ones.
    """
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        return "a webhook URL must be http:// or https://"
    policy = NetworkPolicy(allowed_private_hosts=settings.BROWSER_ALLOWED_PRIVATE_HOSTS)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(policy.url_refusal(url))
    # Called from async code: decide on a thread of its own rather than nest event loops.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, policy.url_refusal(url)).result()
