"""The Profile row: a name, its sealed browser state and what may be shown of it (cookie domains, size, use)."""

import json
from typing import Any
from uuid import uuid4

from django.db import models
from django.utils import timezone

from agent_platform import ids
from agent_platform.models import Workspace
from runs.secret_box import seal_value, unseal_value

NAME_MAX_CHARS = 100


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
