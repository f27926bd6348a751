"""Sessions, runs and the append-only event record of everything that happened in a run."""

import secrets
from decimal import Decimal
from typing import Any
from uuid import uuid4

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agent_platform import ids
from agent_platform.lib.money import exact_usd
from agent_platform.lib.timestamps import rfc3339
from agent_platform.models import Workspace

from .profiles.models import Profile

# A UUID as an id in a path or query: the v4 API's ids, which v1 and the pages accept beside run_…/sess_….


def proxy_address(scheme: str, host: str, port: int) -> str:
    """scheme://host:port: how events, pages and errors name a proxy (never with its credentials)."""
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


class ProxyQuerySet(models.QuerySet["Proxy"]):
    def for_workspace(self, workspace: Workspace) -> "ProxyQuerySet":
        return self.filter(workspace=workspace)

    def usable(self) -> "ProxyQuerySet":
        return self.filter(deleted_at__isnull=True)


class Proxy(models.Model):
    """A workspace's own upstream proxy: the runs of a session that names it go out through it, behind the egress
    guard (docs/proxies.md). Deleting one keeps its row without its URL, so a session that used it never goes out
    directly by mistake and its runs still say which proxy they had."""

    class Scheme(models.TextChoices):
        HTTP = "http"
        HTTPS = "https"
        SOCKS5 = "socks5"

    public_id = models.CharField(max_length=40, unique=True, default=ids.proxy_id, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="proxies")
    name = models.CharField(max_length=100)
    # What may be shown: where the proxy is and whether it takes credentials, never the credentials.
    scheme = models.CharField(max_length=10, choices=Scheme.choices)
    host = models.CharField(max_length=253)
    port = models.PositiveIntegerField()
    has_credentials = models.BooleanField(default=False)
    # The whole URL, credentials included, sealed under SECRETS_KEY as run secrets are (runs.secret_box: {"sealed":
    # token}); only a worker opens it. Emptied when the proxy is deleted.
    sealed_url = models.JSONField(default=dict, blank=True, editable=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = ProxyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="proxy_ws_created")]

    def __str__(self) -> str:
        return self.public_id

    @property
    def address(self) -> str:
        return proxy_address(self.scheme, self.host, self.port)


class SessionQuerySet(models.QuerySet["Session"]):
    def for_workspace(self, workspace: Workspace) -> "SessionQuerySet":
        return self.filter(workspace=workspace)


class Session(models.Model):
    """A browser session: its output schema and its browser state (cookies, storage) carry over to follow-up runs."""

    public_id = models.CharField(max_length=40, unique=True, default=ids.session_id, editable=False)
    # The id the Browser Use v4 API knows the session by (its ids are UUIDs); v1 and the pages accept it too.
    uuid = models.UUIDField(unique=True, default=uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sessions")
    output_schema = models.JSONField(null=True, blank=True)
    # A name of the operator's choosing (v4's session title); empty when none was given.
    title = models.CharField(max_length=255, blank=True)
    # The most the session's runs together may cost (v4's maxCostUsd); null: no session budget, only each run's cap.
    max_cost_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    browser_state = models.JSONField(null=True, blank=True)
    # The upstream proxy every run of the session goes out through (a session property, like its schema); null: the
    # egress guard connects directly. RESTRICT: a proxy is deleted softly, and only a workspace's deletion removes it.
    proxy = models.ForeignKey(Proxy, null=True, blank=True, on_delete=models.RESTRICT, related_name="sessions")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = SessionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["workspace", "-created_at"], name="session_ws_created")]

    def __str__(self) -> str:
        return self.public_id


class RunQuerySet(models.QuerySet["Run"]):
    def for_workspace(self, workspace: Workspace) -> "RunQuerySet":
        return self.filter(workspace=workspace)

    def active(self) -> "RunQuerySet":
        return self.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING])

    def finished(self) -> "RunQuerySet":
        return self.filter(status__in=Run.TERMINAL)


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class ErrorCode(models.TextChoices):
        TASK_FAILED = "task_failed"
        AGENT_LIMIT = "agent_limit"
        AGENT_INCOMPLETE = "agent_incomplete"
        MODEL_ERROR = "model_error"
        BROWSER_ERROR = "browser_error"
        CANCELLED = "cancelled"
        TIMEOUT = "timeout"
        WORKER_LOST = "worker_lost"
        COST_LIMIT = "cost_limit"
        MODEL_REFUSED = "model_refused"

    class Kind(models.TextChoices):
        # An agent's run: model requests and browser actions.
        AGENT = "agent"
        # A sign-in by hand: a live browser on a profile with no agent and no model requests; the operator drives
        # it through the interactive live view and presses Save (runtime.sign_in).
        SIGN_IN = "sign_in"

    TERMINAL = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    public_id = models.CharField(max_length=40, unique=True, default=ids.run_id, editable=False)
    # The id the Browser Use v4 API knows the run by; v1 and the pages accept it too.
    uuid = models.UUIDField(unique=True, default=uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="runs")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    # HMAC of the launch's arguments: a key replayed with other arguments is a conflict, not a replay.
    idempotency_fingerprint = models.CharField(max_length=64, blank=True, editable=False)

    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.AGENT)
    # The profile the run's browser started from (only a session's first run names one); null when none, or when
    # the profile was deleted since.
    profile = models.ForeignKey(Profile, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    # Whether the run writes its final browser state back to its profile when it ends.
    save_profile = models.BooleanField(default=True)
    # A sign-in by hand: when the operator pressed Save (the worker writes the profile and ends the run).
    save_requested_at = models.DateTimeField(null=True, blank=True)
    task = models.TextField()
    start_url = models.URLField(max_length=2000, blank=True)
    model = models.CharField(max_length=100)
    # The model's effort level (one of its own, from the Models API) and thinking mode ("adaptive" or the model's
    # lowest setting); "" means the model's default. The agent loop reads both.
    effort = models.CharField(max_length=10, blank=True, default="")
    thinking = models.CharField(max_length=20, blank=True, default="")
    # Runs driven by the bundled scripted model (no API key) are labelled as such everywhere.
    scripted = models.BooleanField(default=False)
    max_turns = models.PositiveIntegerField(default=30)
    judge = models.BooleanField(default=False)
    judge_context = models.JSONField(default=list, blank=True)
    allowed_domains = models.JSONField(default=list, blank=True)
    allow_javascript = models.BooleanField(default=False)
    # The browser's viewport for this run (v4's browserSettings screen size); null: the BROWSER_VIEWPORT_* settings.
    viewport_width = models.PositiveIntegerField(null=True, blank=True)
    viewport_height = models.PositiveIntegerField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # The most the run's model requests may cost; the launch fills it from the workspace's default. Null: no cap
    # (runs launched before caps existed).
    max_cost_usd = models.DecimalField(max_digits=10, decimal_places=4, null=True, blank=True)
    # Per-run secrets {NAME: value}: typed into pages for the agent, masked in every event, never serialized, and
    # cleared when the run ends (runs.secrets).
    secrets = models.JSONField(default=dict, blank=True, editable=False)
    # {NAME: [host, ...]}: the hosts (and their subdomains) a secret may be typed into; a secret not named here may be
    # typed anywhere the run may browse. Not secret, so not sealed.
    secret_domains = models.JSONField(default=dict, blank=True)

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    success = models.BooleanField(null=True, blank=True)
    output = models.TextField(blank=True)
    data = models.JSONField(null=True, blank=True)
    error_code = models.CharField(max_length=20, choices=ErrorCode.choices, blank=True)
    error_message = models.TextField(blank=True)
    signals = models.JSONField(default=dict, blank=True)

    # Totals of the run's ModelRequest rows, kept current as each row is written so lists need no aggregation.
    usage_requests = models.PositiveIntegerField(default=0)
    usage_input = models.PositiveBigIntegerField(default=0)
    usage_output = models.PositiveBigIntegerField(default=0)
    usage_cache_read = models.PositiveBigIntegerField(default=0)
    usage_cache_write = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0))

    last_seq = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    # When the run got its runs-queue message; null while it waits behind its workspace's concurrency limit
    # (runs.queueing).
    admitted_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    # Written by the worker while it owns the run; a running run whose heartbeat is stale lost its worker.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    # Set while an operator has paused the agent (runs.human): no model request is sent until it is cleared.
    paused_at = models.DateTimeField(null=True, blank=True)
    # A run handed over by its worker (lost, or draining for a deploy) goes on on another one from its last checkpoint
    # (runs.handover). `handovers` counts every handover and fences the workers: a write of a worker that held an
    # earlier one is refused. `worker_losses` counts the lost workers only (bounded by RUN_MAX_RECOVERIES).
    # `handed_over_at` is set while the run waits for its next worker.
    handovers = models.PositiveIntegerField(default=0)
    worker_losses = models.PositiveIntegerField(default=0)
    handed_over_at = models.DateTimeField(null=True, blank=True)
    # The Celery queue its worker took it from: a handed-over run goes back to that queue, to a worker like the last.
    queue = models.CharField(max_length=200, blank=True)
    # When its content (events, screenshots, trace, files, task and output) was removed, by a purge or the
    # workspace's retention (runs.purge); its usage and cost stay, so the bill does not change.
    purged_at = models.DateTimeField(null=True, blank=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "idempotency_key"],
                condition=Q(idempotency_key__isnull=False),
                name="run_unique_idempotency_key",
            )
        ]
        indexes = [
            models.Index(fields=["workspace", "-created_at", "-id"], name="run_ws_created"),
            models.Index(fields=["workspace", "status", "-created_at"], name="run_ws_status_created"),
            models.Index(fields=["session", "created_at"], name="run_session_created"),
            # The fair pick and admissions read only queued runs: a small index however many runs have ended.
            models.Index(fields=["workspace", "id"], condition=Q(status="queued"), name="run_queued"),
            models.Index(
                fields=["status", "heartbeat_at"], condition=Q(status="running"), name="run_running_heartbeat"
            ),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def is_finished(self) -> bool:
        return self.status in self.TERMINAL

    @property
    def is_paused(self) -> bool:
        """A person has control: the agent sends no model request until the run is resumed (runs.human)."""
        return self.status == self.Status.RUNNING and self.paused_at is not None

    @property
    def accepts_control(self) -> bool:
        """Whether a member's mouse and keyboard may drive the run's page through the interactive live view now: a
        running sign-in by hand always does (it has no agent to disturb), an agent's run while a person has control
        (the agent is paused). The worker-side input dispatcher (runtime.browser.control) serves any run kind whose
        page lives in the worker's browser host."""
        return self.is_paused or (self.status == self.Status.RUNNING and self.kind == self.Kind.SIGN_IN)

    @property
    def usage_total(self) -> int:
        return self.usage_input + self.usage_output + self.usage_cache_read + self.usage_cache_write

    @property
    def usage(self) -> dict[str, int | str]:
        return {
            "requests": self.usage_requests,
            "total": self.usage_total,
            "output": self.usage_output,
            "cache_read": self.usage_cache_read,
            "cache_write": self.usage_cache_write,
            # format "f": normalize() alone would write 10 dollars as "1E+1".
            "cost_usd": exact_usd(self.cost_usd),
        }

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at or timezone.now()
        return (end - self.started_at).total_seconds()


class Event(models.Model):
    """One thing that happened in a run, numbered by seq so viewers can resume without gaps or duplicates."""

    public_id = models.CharField(max_length=40, unique=True, default=ids.event_id, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=60)
    payload = models.JSONField(default=dict)
    processed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="event_unique_run_seq")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.type}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.public_id,
            "seq": self.seq,
            "type": self.type,
            "data": self.payload,
            "processed_at": rfc3339(self.processed_at),
        }


class RunInput(models.Model):
    """A question the agent asked the operator (the ask_human tool) and its answer. A secret answer is sealed at rest
    (runs.secret_box) and cleared when the run ends, like the run's secrets."""

    class State(models.TextChoices):
        PENDING = "pending"
        ANSWERED = "answered"
        TIMED_OUT = "timed_out"  # no one answered within RUN_INPUT_TIMEOUT_SECONDS
        CLOSED = "closed"  # the run ended before an answer

    public_id = models.CharField(max_length=40, unique=True, default=ids.input_id, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="inputs")
    question = models.TextField()
    secret = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    answer = models.TextField(blank=True)
    answered_by = models.CharField(max_length=200, blank=True)
    asked_at = models.DateTimeField(default=timezone.now)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "asked_at", "id"]
        constraints = [
            # The agent waits on one question at a time.
            models.UniqueConstraint(fields=["run"], condition=Q(state="pending"), name="run_input_one_pending")
        ]

    def __str__(self) -> str:
        return self.public_id

    def as_pending(self) -> dict[str, Any]:
        return {"id": self.public_id, "question": self.question, "secret": self.secret, "asked_at": self.asked_at}


class RunMessage(models.Model):
    """A user message queued for the agent's next request: an operator's steer, or the note a person left when they
    handed control back."""

    class Kind(models.TextChoices):
        STEER = "steer"
        HANDBACK = "handback"
        TIMED_OUT = "timed_out"  # a pause no one handed back ended by itself

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="queued_messages")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.STEER)
    text = models.TextField(blank=True)
    sent_by = models.CharField(max_length=200, blank=True)
    queued_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "queued_at", "id"]
        indexes = [
            models.Index(
                fields=["run", "queued_at"], condition=Q(delivered_at__isnull=True), name="run_message_undelivered"
            )
        ]

    def __str__(self) -> str:
        return f"{self.run_id} {self.kind}"


# The files of runs live in their own module; imported here so Django registers the model with the app.


class RunCheckpoint(models.Model):
    """Where a running run can be continued from by another worker (runs.handover): written with each turn's record,
    before the model's next request. The conversation is kept as the exact JSON text the model was sent (assistant
    turns byte for byte, thinking signatures included), each row holding the messages from `first_message` on (the
    previous row's last message again, which the loop may have added to since). The browser's storage state is sealed
    like a run's secrets. A run's checkpoints are deleted when it ends: they are needed only while it runs."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints")
    # The model requests answered before this point (the loop's replies): a continuation redoes from the next one.
    turn = models.PositiveIntegerField()
    handovers = models.PositiveIntegerField()  # the run's handovers when it was written (which worker wrote it)
    first_message = models.PositiveIntegerField()
    messages = models.TextField()
    loop_state = models.JSONField(default=dict)
    browser_state = models.JSONField(default=dict, blank=True, editable=False)  # sealed (runs.secret_box)
    url = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.run_id} at turn {self.turn}"


def share_token() -> str:
    # 32 random bytes: a link that cannot be guessed, and the whole of what opens it.
    return secrets.token_urlsafe(32)


class SessionShare(models.Model):
    """A link showing one session read-only to anyone who holds it, signed in or not (runs.shares): unguessable,
    revocable, optionally expiring, counting its views. One per session; turned off and on again it keeps its token,
    as Browser Use's share does."""

    # The id Browser Use's v4 API knows the share by (SessionShareInfo.id).
    uuid = models.UUIDField(unique=True, default=uuid4, editable=False)
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="share")
    token = models.CharField(max_length=64, unique=True, default=share_token, editable=False)
    active = models.BooleanField(default=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    view_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"share of {self.session_id}"

    @property
    def expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()
