"""Workspaces and who may act in them (members, API keys), and what model requests cost (requests, prices)."""

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser, User
from django.db import connection, models, transaction
from django.db.models import F, Q
from django.db.models.functions import TruncDay
from django.utils import timezone

API_KEY_PREFIX = "ph_"


DEFAULT_MAX_COST_USD = Decimal(5)
DEFAULT_EXTRACTION_MODEL = "claude-haiku-5-5"
# What a new workspace keeps of its runs' content, in days (docs/scaling.md: Retention).
DEFAULT_RETENTION_DAYS = 30


class Workspace(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    # The cost cap a run gets when its launch names none.
    default_max_cost_usd = models.DecimalField(max_digits=10, decimal_places=4, default=DEFAULT_MAX_COST_USD)
    # Optional: no request is sent once the workspace's spend this calendar month (UTC) would pass it.
    monthly_cost_cap_usd = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    # The model the agent's extract tool reads pages with (a cheaper one than the run's, usually).
    extraction_model = models.CharField(max_length=100, default=DEFAULT_EXTRACTION_MODEL)
    # How many of its runs may be with the workers at once, and how many may be queued; null: the
    # WORKSPACE_MAX_CONCURRENT_RUNS and WORKSPACE_MAX_QUEUED_RUNS settings (runs.queueing).
    max_concurrent_runs = models.PositiveIntegerField(null=True, blank=True)
    max_queued_runs = models.PositiveIntegerField(null=True, blank=True)
    # How many days what its runs produced is kept (events' payloads, screenshots, live-view images, traces, files,
    # checkpoints: runs.purge); null keeps it until purged by hand. Usage and cost are kept whatever this says.
    retention_days = models.PositiveIntegerField(null=True, blank=True, default=DEFAULT_RETENTION_DAYS)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner"
        MEMBER = "member"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["workspace__name", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="membership_unique_user_workspace")]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"


def workspaces_of(user: AbstractBaseUser | AnonymousUser) -> models.QuerySet[Workspace]:
    """The workspaces a user may see: those they are a member of, and nothing for anyone else."""
    if not user.is_authenticated:
        return Workspace.objects.none()
    return Workspace.objects.filter(memberships__user__pk=user.pk)


def hash_secret(secret: str) -> str:
    # The secret is 32 random bytes, so a fast keyed hash is enough; no password-style stretching is needed.
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def active(self) -> "ApiKeyQuerySet":
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


class ApiKey(models.Model):
    """A workspace's API key: the secret is shown once at creation; only its hash and a visible prefix are kept."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    hashed_secret = models.CharField(max_length=64)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{API_KEY_PREFIX}{self.prefix}… ({self.workspace})"

    @property
    def display(self) -> str:
        return f"{API_KEY_PREFIX}{self.prefix}…"

    @property
    def actor(self) -> str:
        """Who acted with this key, as events and the agent's messages name them (by its visible prefix)."""
        return f"api key {self.prefix}"

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()

    @classmethod
    def issue(
        cls,
        workspace: Workspace,
        *,
        name: str = "",
        created_by: User | None = None,
        expires_at: datetime | None = None,
    ) -> "IssuedKey":
        """Create a key and return it with its full secret, which is never stored and cannot be shown again."""
        prefix = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        key = cls.objects.create(
            workspace=workspace,
            name=name,
            prefix=prefix,
            hashed_secret=hash_secret(secret),
            created_by=created_by,
            expires_at=expires_at,
        )
        return IssuedKey(key, f"{API_KEY_PREFIX}{prefix}_{secret}")

    @classmethod
    def authenticate(cls, token: str) -> "ApiKey | None":
        """The active key a bearer token names, compared in constant time; None for anything else."""
        if not token.startswith(API_KEY_PREFIX):
            return None
        prefix, sep, secret = token[len(API_KEY_PREFIX) :].partition("_")
        if not sep or not prefix or not secret or len(prefix) > 16:
            return None
        key = cls.objects.active().select_related("workspace").filter(prefix=prefix).first()
        if key is None or not hmac.compare_digest(key.hashed_secret, hash_secret(secret)):
            return None
        return key

    def revoke(self) -> None:
        if self.revoked_at is None:
            self.revoked_at = timezone.now()
            self.save(update_fields=["revoked_at"])


class IssuedKey(NamedTuple):
    """A new key and its full secret (shown once); a tuple, so `key, secret = ApiKey.issue(...)` reads as it did."""

    key: ApiKey
    secret: str


class Speed(models.TextChoices):
    STANDARD = "standard"
    FAST = "fast"


class Price(models.Model):
    """What a model costs per million tokens from `valid_from` on; a later row for the same model replaces it.

    A model priced by prompt length has one row per tier with the same `valid_from`: a request uses the row with
    the highest `min_prompt_tokens` at or below its prompt (input + cache read + cache write), for every token.
    """

    model = models.CharField(max_length=100)
    speed = models.CharField(max_length=10, choices=Speed.choices, default=Speed.STANDARD)
    input_per_mtok = models.DecimalField(max_digits=12, decimal_places=4)
    output_per_mtok = models.DecimalField(max_digits=12, decimal_places=4)
    cache_write_5m_per_mtok = models.DecimalField(max_digits=12, decimal_places=4)
    cache_write_1h_per_mtok = models.DecimalField(max_digits=12, decimal_places=4)
    cache_read_per_mtok = models.DecimalField(max_digits=12, decimal_places=4)
    supports_vision = models.BooleanField(default=True)
    min_prompt_tokens = models.PositiveIntegerField(
        default=0, help_text="This row applies to requests whose prompt has at least this many tokens (0: all)."
    )
    valid_from = models.DateTimeField()

    class Meta:
        ordering = ["model", "speed", "-valid_from", "min_prompt_tokens"]
        constraints = [
            models.UniqueConstraint(
                fields=["model", "speed", "valid_from", "min_prompt_tokens"], name="price_unique_model_speed_from_tier"
            )
        ]

    def __str__(self) -> str:
        tier = f", prompts from {self.min_prompt_tokens:,} tokens" if self.min_prompt_tokens else ""
        return f"{self.model} ({self.speed}{tier}) from {self.valid_from:%Y-%m-%d}"


class ModelRequestQuerySet(models.QuerySet["ModelRequest"]):
    def bulk_create(self, objs: Iterable["ModelRequest"], *args: Any, **kwargs: Any) -> list["ModelRequest"]:
        """As save does, each new request is added to its day's rollup (UsageDay) in the same transaction."""
        with transaction.atomic(using=self.db, savepoint=False):
            created = super().bulk_create(objs, *args, **kwargs)
            UsageDay.add(created)
        return created

    def for_workspace(self, workspace: Workspace) -> "ModelRequestQuerySet":
        return self.filter(workspace=workspace)

    def real(self) -> "ModelRequestQuerySet":
        """The requests the Anthropic API answered: real spend, without the scripted demo model's."""
        return self.filter(scripted=False)

    def scripted(self) -> "ModelRequestQuerySet":
        return self.filter(scripted=True)


class ModelRequest(models.Model):
    """One Messages API call and what it cost, priced when it was made so later price edits never rewrite it."""

    class Source(models.TextChoices):
        AGENT = "agent"
        JUDGE = "judge"
        EXTRACTION = "extraction"
        COMPACTION = "compaction"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="model_requests")
    # Deleting a run keeps what its requests cost: the bill was paid, and the daily rollup (UsageDay) stays exact.
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="model_requests")
    source = models.CharField(max_length=12, choices=Source.choices)
    model = models.CharField(max_length=100)
    speed = models.CharField(max_length=10, choices=Speed.choices, default=Speed.STANDARD)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_input_tokens = models.PositiveIntegerField(default=0)
    cache_creation_input_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=14, decimal_places=8, default=Decimal(0))
    price = models.ForeignKey(Price, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    # True when no price was in force for the model: billed at zero and shown in the admin, never hidden.
    unpriced = models.BooleanField(default=False)
    # True when the scripted demo model answered (SCRIPTED_MODEL): billed at zero, never counted toward a cost cap,
    # and reported apart from real spend.
    scripted = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = ModelRequestQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["workspace", "created_at"], name="modelrequest_ws_created"),
            models.Index(fields=["run", "source"], name="modelrequest_run_source"),
            # Usage by day groups on exactly this expression (reports.usage_by): the planner counts per day from the
            # index instead of sorting every request of the workspace.
            models.Index(F("workspace"), TruncDay("created_at"), name="modelrequest_ws_day"),
        ]

    def __str__(self) -> str:
        return f"{self.source} {self.model} {self.created_at:%Y-%m-%d %H:%M}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """A new request is added to its day's rollup in the same transaction; a request is never changed after."""
        adding = self._state.adding
        with transaction.atomic(savepoint=False):  # within a turn's record, its transaction; alone, one of its own
            super().save(*args, **kwargs)
            if adding:
                UsageDay.add([self])

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


class UsageDay(models.Model):
    """The model requests of one workspace's day (in TIME_ZONE) for one model, source, speed and kind, summed: what
    the admin's billing view reads, so it never scans every request. Kept exact by construction: a request is added
    in the transaction that stores it (ModelRequest.save), and requests are never changed or deleted one by one (a
    deleted run leaves them; a deleted workspace takes both). `manage.py rebuild_usage_days` writes it again from the
    requests (after TIME_ZONE changes, or rows written around the ORM: raw SQL, COPY)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    model = models.CharField(max_length=100)
    source = models.CharField(max_length=12, choices=ModelRequest.Source.choices)
    speed = models.CharField(max_length=10, choices=Speed.choices, default=Speed.STANDARD)
    scripted = models.BooleanField(default=False)
    request_count = models.PositiveBigIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cache_read_input_tokens = models.PositiveBigIntegerField(default=0)
    cache_creation_input_tokens = models.PositiveBigIntegerField(default=0)
    # Integer units of 10^-8 dollars (ModelRequest's stored precision): sums exact on PostgreSQL and SQLite alike.
    cost_usd_units = models.BigIntegerField(default=0)
    unpriced_count = models.PositiveBigIntegerField(default=0)

    KEYS = ("workspace_id", "day", "model", "source", "speed", "scripted")
    SUMS = (
        "request_count",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cost_usd_units",
        "unpriced_count",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "day", "model", "source", "speed", "scripted"], name="usageday_unique_key"
            )
        ]
        indexes = [models.Index(fields=["day"], name="usageday_day")]

    def __str__(self) -> str:
        return f"{self.day} {self.model} {self.source}"

    @classmethod
    def add(cls, requests: Iterable[ModelRequest]) -> None:
        """Add stored requests to their days' rows: one upsert a day row (PostgreSQL and SQLite both speak ON
        CONFLICT), so concurrent turns of a workspace each add theirs and none is lost."""
        zone = timezone.get_default_timezone()
        days: dict[tuple[Any, ...], list[int]] = {}
        for request in requests:
            key = (
                request.workspace_id,
                timezone.localdate(request.created_at, zone),
                request.model,
                request.source,
                request.speed,
                request.scripted,
            )
            so_far = days.setdefault(key, [0] * len(cls.SUMS))
            counted = (
                1,
                request.input_tokens,
                request.output_tokens,
                request.cache_read_input_tokens,
                request.cache_creation_input_tokens,
                cost_units(Decimal(request.cost_usd)),
                int(request.unpriced),
            )
            days[key] = [total + value for total, value in zip(so_far, counted, strict=True)]
        if not days:
            return
        quote = connection.ops.quote_name
        table = quote(cls._meta.db_table)
        columns = ", ".join(quote(name) for name in (*cls.KEYS, *cls.SUMS))
        keys = ", ".join(quote(name) for name in cls.KEYS)
        sums = ", ".join(f"{quote(name)} = {table}.{quote(name)} + excluded.{quote(name)}" for name in cls.SUMS)
        placeholders = ", ".join(["%s"] * (len(cls.KEYS) + len(cls.SUMS)))
        # Only the model's own names, quoted by the connection, are formatted in; every value is a parameter.
        upsert = f"INSERT INTO {table} ({columns}) VALUES ({placeholders}) ON CONFLICT ({keys}) DO UPDATE SET {sums}"  # noqa: S608
        # In key order, so two transactions adding to the same rows lock them in the same order (no deadlock).
        rows = [
            [workspace_id, connection.ops.adapt_datefield_value(day), *rest, *summed]
            for (workspace_id, day, *rest), summed in sorted(days.items())
        ]
        with connection.cursor() as cursor:
            cursor.executemany(upsert, rows)


COST_UNITS_PER_DOLLAR = 10**8


def cost_units(cost_usd: Decimal) -> int:
    """A cost in integer units of 10^-8 dollars, the precision ModelRequest stores."""
    return int((cost_usd * COST_UNITS_PER_DOLLAR).to_integral_value())
