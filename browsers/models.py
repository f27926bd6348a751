"""A browser session (a dedicated Chromium a client drives over CDP) and its timeline of what the client did."""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from datetime import datetime, timedelta
from decimal import Decimal
from uuid import uuid4

from django.conf import settings
from django.db import models
from django.utils import timezone

from agent_platform.models import ApiKey, Workspace
from runs.models import Proxy, Run
from runs.profiles.models import Profile

PUBLIC_PREFIX = "brs_"


def new_token_salt() -> str:
    return secrets.token_hex(16)


def minute_price_now() -> Decimal:
    """The price of a browser minute for a session created now: kept on the session, so a later change of
    BROWSER_MINUTE_PRICE_USD never reprices what was already used."""
    return settings.BROWSER_MINUTE_PRICE_USD


class BrowserSessionQuerySet(models.QuerySet["BrowserSession"]):
    def for_workspace(self, workspace: Workspace) -> BrowserSessionQuerySet:
        return self.filter(workspace=workspace)

    def live(self) -> BrowserSessionQuerySet:
        return self.filter(status__in=BrowserSession.LIVE)

    def on_a_worker(self) -> BrowserSessionQuerySet:
        """Sessions a worker has taken and not yet ended: their heartbeat says the worker is still there."""
        return self.filter(status__in=BrowserSession.ON_A_WORKER)


class BrowserSession(models.Model):
    """One Chromium process on one worker for one client. Its CDP token is derived from the secret key and a salt
    kept here, so the row holds nothing that opens the browser by itself; the token opens it only while it lives."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        STARTING = "starting"
        RUNNING = "running"
        STOPPING = "stopping"
        STOPPED = "stopped"
        FAILED = "failed"

    class StopReason(models.TextChoices):
        REQUESTED = "requested"
        IDLE_TIMEOUT = "idle_timeout"
        MAX_DURATION = "max_duration"
        FINISHED = "finished"
        BROWSER_EXITED = "browser_exited"
        WORKER_LOST = "worker_lost"
        START_FAILED = "start_failed"

    LIVE = (Status.QUEUED, Status.STARTING, Status.RUNNING, Status.STOPPING)
    ON_A_WORKER = (Status.STARTING, Status.RUNNING, Status.STOPPING)

    uuid = models.UUIDField(unique=True, default=uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="browser_sessions")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    api_key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    profile = models.ForeignKey(Profile, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    save_profile = models.BooleanField(default=False)
    proxy = models.ForeignKey(Proxy, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    viewport_width = models.PositiveIntegerField()
    viewport_height = models.PositiveIntegerField()
    idle_timeout_seconds = models.PositiveIntegerField()
    max_duration_seconds = models.PositiveIntegerField()
    record = models.BooleanField(default=False)
    metadata = models.JSONField(default=dict, blank=True)
    token_salt = models.CharField(max_length=64, default=new_token_salt, editable=False)
    minute_price_usd = models.DecimalField(max_digits=12, decimal_places=8, default=minute_price_now, editable=False)

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    stop_reason = models.CharField(max_length=32, choices=StopReason.choices, blank=True, default="")
    error = models.TextField(blank=True, default="")
    worker = models.CharField(max_length=200, blank=True, default="")
    # where the web tier reaches the worker's relay (host:port), and the session's download folder on that worker
    relay_address = models.CharField(max_length=200, blank=True, default="")
    download_dir = models.CharField(max_length=500, blank=True, default="")
    trace_name = models.CharField(max_length=300, blank=True, default="")
    final_screenshot = models.CharField(max_length=300, blank=True, default="")
    final_url = models.TextField(blank=True, default="")
    final_title = models.CharField(max_length=300, blank=True, default="")
    final_text = models.TextField(blank=True, default="")
    # the client's own claim when it finished the session (POST /browsers/{id}/finish), and the run it became
    claim = models.JSONField(default=dict, blank=True)
    run = models.OneToOneField(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="browser_session")

    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    last_activity_at = models.DateTimeField(null=True, blank=True)
    # written by the worker's one heartbeat writer while it holds the browser; the reaper ends a session gone silent
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    objects = BrowserSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="browser_session_ws_created")]

    def __str__(self) -> str:
        return self.public_id

    @property
    def public_id(self) -> str:
        return f"{PUBLIC_PREFIX}{self.uuid.hex}"

    @property
    def is_live(self) -> bool:
        return self.status in self.LIVE

    def token(self) -> str:
        """The CDP token: unguessable without the secret key, never stored."""
        message = f"browser-cdp:{self.uuid.hex}:{self.token_salt}".encode()
        return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()

    def token_matches(self, token: str) -> bool:
        return hmac.compare_digest(self.token(), token)

    def timeout_at(self) -> datetime:
        return (self.started_at or self.created_at) + timedelta(seconds=self.max_duration_seconds)

    def duration_seconds(self) -> float:
        if self.started_at is None:
            return 0.0
        end = self.ended_at or timezone.now()
        return max(0.0, (end - self.started_at).total_seconds())

    def browser_minutes(self) -> int:
        """Minutes billed: every started minute of the browser's life."""
        return math.ceil(self.duration_seconds() / 60)

    def cost_usd(self) -> Decimal:
        return Decimal(self.browser_minutes()) * Decimal(self.minute_price_usd)


class BrowserEvent(models.Model):
    """One line of a session's timeline, read from CDP: a target opened or closed, a navigation, a download, a
    refusal of the guard, the start and the end."""

    session = models.ForeignKey(BrowserSession, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="browser_event_session_seq")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.type}"
