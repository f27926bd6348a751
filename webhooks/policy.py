"""Which webhook addresses may be called: the browser's egress policy (public addresses, or the allowed private hosts)."""

from urllib.parse import urlsplit

from django.conf import settings

from agent_platform.netpolicy import NetworkPolicy, decide_now, host_of, port_of


def address_refusal(url: str) -> str | None:
    """Why a webhook may not be sent to `url`, or None. Decided before any connection is made.

    The browser's address policy (agent_platform.netpolicy): the same address classes are refused (loopback, private,
    link-local, cloud metadata...), and the same BROWSER_ALLOWED_PRIVATE_HOSTS re-open private ones.
    """
    if urlsplit(url).scheme.lower() not in ("http", "https"):
        return "a webhook URL must be http:// or https://"
    return _refusal_under(url, settings.BROWSER_ALLOWED_PRIVATE_HOSTS)


def allowing_hint(url: str) -> str | None:
    """How an operator allows `url` (a receiver on this machine or the private network), when one setting entry
    would: the entry to add to BROWSER_ALLOWED_PRIVATE_HOSTS. None when no entry could (cloud metadata, bad URLs)."""
    _, host = host_of(url)
    port = port_of(url)
    if not host or port is None:
        return None
    entry = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if _refusal_under(url, [*settings.BROWSER_ALLOWED_PRIVATE_HOSTS, entry]) is not None:
        return None
    return (
        f"to allow a receiver there, add {entry} to the BROWSER_ALLOWED_PRIVATE_HOSTS setting (comma-separated, "
        "in the environment of the web server and the workers); it opens that address to the browser agent too"
    )


def _refusal_under(url: str, allowed_private_hosts: list[str]) -> str | None:
    return decide_now(NetworkPolicy(allowed_private_hosts=allowed_private_hosts).url_refusal(url))
