"""The Profile row: a name, its sealed browser state and what may be shown of it (cookie domains, size, use)."""

import json
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

from django.db import models
from django.utils import timezone

from agent_platform import ids
from agent_platform.models import Workspace
from runs.secret_box import seal_value, unseal_value

NAME_MAX_CHARS = 100
USER_ID_MAX_CHARS = 255


def profile_id() -> str:
    return ids.new_public_id("prof")


class ProfileQuerySet(models.QuerySet["Profile"]):
    def for_workspace(self, workspace: Workspace) -> "ProfileQuerySet":
        return self.filter(workspace=workspace)


def cookie_domains(state: dict[str, Any] | None) -> list[str]:
    """The hosts a state holds cookies for, without the leading dot, sorted: what the profile may show of itself."""
    domains = {
        str(cookie.get("domain", "")).lstrip(".").lower()
        for cookie in (state or {}).get("cookies", [])
        if isinstance(cookie, dict)
    }
    return sorted(domain for domain in domains if domain)


def host_matches(host: str, domain: str) -> bool:
    """Whether a cookie set for `domain` (a leading dot or not) goes to `host`."""
    domain = domain.lstrip(".").lower()
    host = host.lower()
    return bool(domain) and (host == domain or host.endswith("." + domain))


def state_summary(state: dict[str, Any] | None, page_url: str = "") -> dict[str, Any]:
    """What saving `state` would store, without a value or a cookie's name: cookies counted per domain, the origins
    with local storage and with IndexedDB, and whether the browser looks signed in to the page it shows (the page's
    host holds an HttpOnly cookie: where nearly every site keeps a sign-in, out of its scripts' reach). A guess, said
    as one: a site may keep its sign-in elsewhere."""
    state = state or {}
    counts: dict[str, int] = {}
    host = (urlsplit(page_url).hostname or "") if page_url else ""
    signed_in = False
    for cookie in state.get("cookies", []):
        if not isinstance(cookie, dict):
            continue
        domain = str(cookie.get("domain", "")).lstrip(".").lower()
        if not domain:
            continue
        counts[domain] = counts.get(domain, 0) + 1
        if host and cookie.get("httpOnly") and host_matches(host, domain):
            signed_in = True
    origins = [origin for origin in state.get("origins", []) if isinstance(origin, dict)]
    return {
        "cookies": [{"domain": domain, "count": counts[domain]} for domain in sorted(counts)],
        "local_storage_origins": sum(1 for origin in origins if origin.get("localStorage")),
        "indexed_db_origins": sum(1 for origin in origins if origin.get("indexedDB")),
        "looks_signed_in": signed_in,
        "host": host,
    }


def plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def what_save_stores(summary: dict[str, Any]) -> str:
    """The sentence a person reads before Save, from a state_summary: "Save will store cookies for shop.localhost
    (3 cookies), local storage for 1 origin"."""
    parts = []
    cookies = summary.get("cookies") or []
    if cookies:
        listed = ", ".join(f"{item['domain']} ({plural(item['count'], 'cookie', 'cookies')})" for item in cookies)
        parts.append(f"cookies for {listed}")
    if summary.get("local_storage_origins"):
        parts.append(f"local storage for {plural(summary['local_storage_origins'], 'origin', 'origins')}")
    if summary.get("indexed_db_origins"):
        parts.append(f"IndexedDB for {plural(summary['indexed_db_origins'], 'origin', 'origins')}")
    if not parts:
        return "Save will store an empty profile: the browser holds no cookies and no storage yet"
    return "Save will store " + ", ".join(parts)


def state_size(state: dict[str, Any] | None) -> int:
    """The state's size in bytes as JSON (before sealing): what a run's browser loads from it."""
    if not state:
        return 0
    return len(json.dumps(state, separators=(",", ":")).encode())


class Profile(models.Model):
    """A named browser state a run starts from and, when it ends, writes back (docs/profiles.md).

    The state (Playwright's storage state: cookies, localStorage, IndexedDB) is kept only sealed, under SECRETS_KEY,
    as run secrets are: a database dump shows an opaque token. It is opened only by the worker that runs a run on the
    profile; the API, the pages, events, traces and logs show the cookie domains and the size, never the state.
    """

    public_id = models.CharField(max_length=40, unique=True, default=profile_id, editable=False)
    # The id Browser Use's v4 API would know the profile by (its ids are UUIDs), as sessions and runs have.
    uuid = models.UUIDField(unique=True, default=uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="profiles")
    name = models.CharField(max_length=NAME_MAX_CHARS)
    # The caller's own id for whom the profile is (Browser Use's userId); Pilothouse only keeps and shows it.
    user_id = models.CharField(max_length=USER_ID_MAX_CHARS, blank=True, default="")
    # A Fernet token of the storage state's JSON; "" for a profile no run has written yet.
    sealed_state = models.TextField(blank=True, default="", editable=False)
    cookie_domains = models.JSONField(default=list, blank=True)
    size_bytes = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ProfileQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at", "-id"], name="profile_ws_created")]

    def __str__(self) -> str:
        return self.public_id

    @staticmethod
    def sealed_fields(state: dict[str, Any] | None) -> dict[str, Any]:
        """The columns a write of `state` sets, all at once (one UPDATE: never a half state)."""
        return {
            "sealed_state": seal_value(state) if state else "",
            "cookie_domains": cookie_domains(state),
            "size_bytes": state_size(state),
        }

    def state(self) -> dict[str, Any] | None:
        """The unsealed storage state, or None when empty. Only the worker calls this (SecretsUnavailable when no
        configured key opens it)."""
        if not self.sealed_state:
            return None
        opened: dict[str, Any] = unseal_value(self.sealed_state)
        return opened
