"""Webhook endpoints of a workspace, the deliveries made to them, and every attempt with its response code."""

import base64
import secrets
from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agent_platform.ids import new_public_id
from agent_platform.models import Workspace
from runs import event_types


def endpoint_id() -> str:
    return new_public_id("whe")


def delivery_id() -> str:
    return new_public_id("whd")


def signing_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and the standard base64 of 32 random bytes (the spec allows 24 to 64)."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class SecretScheme(models.TextChoices):
    """How deliveries are signed with a secret: the Standard Webhooks headers, or our own scheme of before."""

    STANDARD = "standard"
    # Secrets issued before Standard Webhooks ("whsec_" and url-safe base64, not the spec's encoding): they sign the
    # Pilothouse-Signature header until their endpoint's secret is rotated.
    LEGACY = "legacy"


class EventType(models.TextChoices):
    """The types an endpoint subscribes to: the registry's kinds with the webhooks door (a test holds the two equal),
    in the order the migrations' choices have them."""

    RUN_FINISHED = event_types.RUN_FINISHED.name
    RUN_JUDGED = event_types.RUN_JUDGED.name
    RUN_INPUT_REQUESTED = event_types.RUN_INPUT_REQUESTED.name
    BATCH_FINISHED = event_types.BATCH_FINISHED.name
    FILE_DOWNLOADED = event_types.FILE_DOWNLOADED.name
    SCHEDULE_DATA_CHANGED = event_types.SCHEDULE_DATA_CHANGED.name
    SCHEDULE_RUN_FAILED = event_types.SCHEDULE_RUN_FAILED.name


class EndpointQuerySet(models.QuerySet["Endpoint"]):
    def for_workspace(self, workspace: Workspace) -> "EndpointQuerySet":
        return self.filter(workspace=workspace)

    def active(self) -> "EndpointQuerySet":
        return self.filter(active=True)


class Endpoint(models.Model):
    """A URL that receives the workspace's events it subscribes to, signed with its own secret."""

    public_id = models.CharField(max_length=40, unique=True, default=endpoint_id, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list)
    # Needed in clear to sign; shown once, when the endpoint is created or its secret rotated.
    secret = models.CharField(max_length=100, default=signing_secret, editable=False)
    secret_scheme = models.CharField(max_length=10, choices=SecretScheme.choices, default=SecretScheme.STANDARD)
    # The secret before the last rotation: it signs too until retiring_until, so receivers switch without downtime.
    retiring_secret = models.CharField(max_length=100, blank=True, editable=False)
    retiring_secret_scheme = models.CharField(max_length=10, choices=SecretScheme.choices, blank=True)
    retiring_until = models.DateTimeField(null=True, blank=True)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    objects = EndpointQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.public_id

    def subscribes_to(self, event_type: str) -> bool:
        return event_type in (self.events or [])

    def signing_secrets(self, now: datetime) -> list[tuple[str, str]]:
        """(secret, scheme) of each secret that signs a delivery at `now`: the current one, then a retiring one."""
        keys = [(self.secret, self.secret_scheme)]
        if self.retiring_secret and self.retiring_until is not None and now < self.retiring_until:
            keys.append((self.retiring_secret, self.retiring_secret_scheme))
        return keys


class Delivery(models.Model):
    """One event sent to one endpoint: attempted until a 2xx answer, retried with backoff for up to 24 hours."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"

    public_id = models.CharField(max_length=40, unique=True, default=delivery_id, editable=False)
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_type = models.CharField(max_length=30, choices=EventType.choices)
    # The JSON body sent, exactly: {id, type, created_at, data}.
    body = models.TextField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    resend_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="resends")
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["endpoint", "-created_at"], name="delivery_endpoint_created"),
            models.Index(fields=["next_attempt_at"], condition=Q(status="pending"), name="delivery_pending_next"),
        ]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return self.public_id


class Attempt(models.Model):
    """One HTTP request of a delivery: the status code the endpoint answered, or why no answer came."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveSmallIntegerField()
    attempted_at = models.DateTimeField(default=timezone.now)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="attempt_unique_number")]

    def __str__(self) -> str:
        return f"{self.delivery} #{self.number}"
