"""Settings for every process, read from environment variables through small helpers that fail loudly."""

import base64
import os
import secrets
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from agent_platform import object_storage, redis_clients

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PILOTHOUSE_VAR_DIR", BASE_DIR / "var"))


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")


def envint(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} is below the minimum of {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={value} is above the maximum of {maximum}")
    return value


def envlist(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _secret_key() -> str:
    """The SECRET_KEY variable, or a key generated once and kept under var/ so a restart keeps sessions."""
    if key := envstr("SECRET_KEY"):
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def _secrets_keys() -> list[str]:
    """SECRETS_KEY (Fernet keys, comma-separated: the first encrypts run secrets, all decrypt), or one key generated
    once under var/ like SECRET_KEY. Machines that share a database must share these keys."""
    if keys := envlist("SECRETS_KEY"):
        return keys
    path = VAR_DIR / "secrets_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode())
        path.chmod(0o600)
    return [path.read_text().strip()]


def _default_browser_executable() -> str:
    """The lightest Chromium installed: its headless shell first, then the full browser; Playwright's own before
    Debian's.

    Every run is headless, and the headless shell (Playwright's `chromium-headless-shell`, which it launches for
    headless by default; Debian's package of the same name) carries none of the full browser's windowing: a run's
    context costs about a third (bench/context_memory.py: 28.7 against 77.3 MiB PSS), with the same process model,
    a renderer per site of each context and site isolation on.
    """
    cache = Path(os.environ.get("PLAYWRIGHT_BROWSERS_PATH", Path.home() / ".cache" / "ms-playwright"))
    installed = [
        *sorted(cache.glob("chromium_headless_shell-*/chrome-*linux*/*headless?shell"), reverse=True),
        # Debian's own binary: its /usr/bin/chromium-headless-shell only runs it from a shell that stays its parent
        Path("/usr/lib/chromium/chromium-headless-shell"),
        *sorted(cache.glob("chromium-*/chrome-linux*/chrome"), reverse=True),
    ]
    return next((str(path) for path in installed if path.exists()), "/usr/bin/chromium")


DEBUG = envbool("DEBUG", False)
SECRET_KEY = _secret_key()
SECRETS_KEYS = _secrets_keys()
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS")

# Behind TLS in production; `make run` on 127.0.0.1 is plain HTTP, so these follow SECURE_COOKIES.
SECURE_COOKIES = envbool("SECURE_COOKIES", False)
SESSION_COOKIE_SECURE = SECURE_COOKIES
CSRF_COOKIE_SECURE = SECURE_COOKIES
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
BEHIND_TLS_PROXY = envbool("BEHIND_TLS_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "axes",
    "agent_platform",
    "runs",
    "judge",
    "runs.recipes",
    "demo_site",
    "evals",
    "webhooks",
    "django_celery_beat",
    "schedules",
    "browsers",
]

MIDDLEWARE = [
    "agent_platform.middleware.connection_back_to_the_pool",  # outermost: after every other's last query
    "agent_platform.telemetry.traced_request",  # next: its span covers the whole request
    "agent_platform.middleware.ApiFailures",  # next: whatever fails below it answers an API client in JSON
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "agent_platform.middleware.api_router_refusals",
    "agent_platform.middleware.empty_body_is_an_empty_object",
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires: it answers a locked-out sign-in
]

ROOT_URLCONF = "agent_platform.urls"
ASGI_APPLICATION = "agent_platform.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "agent_platform.context_processors.workspace",
            ],
        },
    },
]

# SQLite under var/ is the zero-setup default: WAL lets the web and worker processes read while one writes, and
# IMMEDIATE transactions take the write lock up front so concurrent writers wait (busy timeout) instead of failing.
# A `sqlite:///` DATABASE_URL gets the same connection setup. Its test database is a file beside it (Django's default
# is in memory, private to one process), so the worker subprocesses and Channels of the tests share it.
DATABASE_URL = envstr("DATABASE_URL")
# On PostgreSQL every process draws its connections from a pool of its own (Django's, psycopg_pool) of at most
# DB_POOL_MAX, whatever its threads: a thread holds one only while it reads or writes and gives it back before it
# waits (agent_platform.db.release), so a worker's connections do not grow with WORKER_CONCURRENCY. A thread that finds
# them all taken waits up to DB_POOL_TIMEOUT_SECONDS. DB_POOL_MAX=0 turns the pool off (a connection per thread, kept
# DB_CONN_MAX_AGE seconds: behind PgBouncer, say). SQLite has no pool: its writers queue on its write lock.
DB_POOL_MAX = envint("DB_POOL_MAX", 4, minimum=0)
DB_POOL_TIMEOUT_SECONDS = envint("DB_POOL_TIMEOUT_SECONDS", 30, minimum=1)
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=envint("DB_CONN_MAX_AGE", 0))}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL_MAX:
        DATABASES["default"]["CONN_MAX_AGE"] = 0  # a pooled connection goes back to the pool, not away
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": DB_POOL_MAX,
            "timeout": DB_POOL_TIMEOUT_SECONDS,
        }
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(VAR_DIR / "pilothouse.sqlite3")}}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    _sqlite_path = Path(DATABASES["default"]["NAME"])
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=30000;",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(_sqlite_path.with_name(f"test_{_sqlite_path.name}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = envstr("REDIS_URL", "redis://127.0.0.1:6379/0")
_redis = urlparse(REDIS_URL)
if _redis.scheme not in ("redis", "rediss", "unix"):
    raise ImproperlyConfigured(f"REDIS_URL={REDIS_URL!r} must start with redis://, rediss:// or unix://")
# A Unix socket (the embedded server of `make run`) is spelled differently by kombu and by redis-py.
CELERY_BROKER_URL = f"redis+socket://{_redis.path}" if _redis.scheme == "unix" else REDIS_URL

# Every Redis client sets its socket and connect timeouts and health checks itself (agent_platform/redis_clients.py
# says why): a blocking read must never race its own socket timeout, whatever redis-py's defaults are this year.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [redis_clients.channel_layer_host(REDIS_URL)], "capacity": 1500, "expiry": 30},
    }
}

# Shared by every process: API rate limits count here.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "pilothouse",
        "OPTIONS": redis_clients.cache_options(REDIS_URL),
    }
}

# Runs: how long one may run, the turns it gets unless its launch says (at most runs.launch_rules.MAX_TURNS_LIMIT, a
# system check says so), when a silent worker's run is failed, and when a queued run is enqueued again.
RUN_TIME_LIMIT_SECONDS = envint("RUN_TIME_LIMIT_SECONDS", 1800, minimum=10)
RUN_DEFAULT_MAX_TURNS = envint("RUN_DEFAULT_MAX_TURNS", 30, minimum=1)
RUN_STALE_AFTER_SECONDS = envint("RUN_STALE_AFTER_SECONDS", 60, minimum=5)
# How many times a run goes on after a loss: in a fresh tab or browser after its tab crashed or Chromium exited (one
# more ends it browser_error), and on another worker after its worker was lost (one more ends it worker_lost).
RUN_MAX_RECOVERIES = envint("RUN_MAX_RECOVERIES", 2, minimum=0)
# A worker asked to stop (SIGTERM: a deploy, a restart) hands its runs over to other workers as each finishes its turn;
# past this many seconds it hands over what is left and exits (runtime.drain).
WORKER_DRAIN_SECONDS = envint("WORKER_DRAIN_SECONDS", 60, minimum=1)
# A run queued this long without a worker claiming it is enqueued again (its message may have been lost with Redis).
RUN_QUEUED_REDELIVER_SECONDS = envint("RUN_QUEUED_REDELIVER_SECONDS", 300, minimum=5)
# Per workspace (each may set its own): runs with the workers at once (the rest wait, queued, in launch order), and
# runs queued at all (a launch beyond it answers 429).
WORKSPACE_MAX_CONCURRENT_RUNS = envint("WORKSPACE_MAX_CONCURRENT_RUNS", 20, minimum=1)
WORKSPACE_MAX_QUEUED_RUNS = envint("WORKSPACE_MAX_QUEUED_RUNS", 1000, minimum=1)
# How long an agent's question to the operator (ask_human) and an operator's pause wait for a person: past it the
# agent is told no one answered, or the pause ends by itself. Waiting never counts toward RUN_TIME_LIMIT_SECONDS.
RUN_INPUT_TIMEOUT_SECONDS = envint("RUN_INPUT_TIMEOUT_SECONDS", 900, minimum=1)
API_RATE_LIMIT_PER_MINUTE = envint("API_RATE_LIMIT_PER_MINUTE", 600, minimum=1)

CELERY_TASK_ACKS_LATE = True
# A run is never silently executed twice (it may have acted on the web): a lost worker's run is failed by the reaper.
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Redis hands an unacknowledged message to another worker after this long: longer than any run, so a running run's
# message is never delivered twice (and every countdown, like a webhook's retry, must stay below it).
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": RUN_TIME_LIMIT_SECONDS + 600,
    **redis_clients.broker_transport_options(REDIS_URL),
}
# No result backend (results are ignored; runs write theirs to the database), so the redis_* result-backend timeouts
# have nothing to configure.
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {
    # the runs queue's tasks (runtime/tasks.py), and the names they had until 2026-12-06 (runs.tasks.*)
    "runtime.tasks.*": {"queue": "runs"},
    "runs.tasks.*": {"queue": "runs"},
    "judge.tasks.*": {"queue": "judge"},
    "browsers.tasks.*": {"queue": "browsers"},
}
# Beat reads its schedule from the database (django-celery-beat): the operators' schedules are rows, and so is the
# reaper, which the DatabaseScheduler copies from CELERY_BEAT_SCHEDULE into its table at every start.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = {
    "reap-stale-runs": {"task": "runtime.tasks.reap_stale_runs", "schedule": 30.0},
    "send-overdue-webhooks": {"task": "webhooks.tasks.send_overdue", "schedule": 60.0},
    "apply-retention": {"task": "runtime.tasks.apply_retention", "schedule": 3600.0},
}
# A schedule whose runs fail this many times in a row pauses itself (docs/schedules.md).
SCHEDULE_MAX_CONSECUTIVE_FAILURES = envint("SCHEDULE_MAX_CONSECUTIVE_FAILURES", 3, minimum=1)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Sign-in throttling (django-axes): after LOGIN_FAILURE_LIMIT wrong passwords for one account, or from one address,
# further attempts are refused with 429 for LOGIN_LOCKOUT_MINUTES; the admin lists lock-outs under "Axes".
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=envint("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one locks: per account and per address
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
# The client address is REMOTE_ADDR: a forwarded-for header is believed only behind the TLS proxy we are told of.
AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR", "REMOTE_ADDR") if BEHIND_TLS_PROXY else ("REMOTE_ADDR",)
AXES_IPWARE_PROXY_COUNT = 1 if BEHIND_TLS_PROXY else None
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "runs:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
# Dates and times as the operator pages write them, in the admin too (its English defaults are 12-hour).
FORMAT_MODULE_PATH = ["agent_platform.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
MEDIA_URL = "media/"
MEDIA_ROOT = Path(envstr("MEDIA_ROOT", str(VAR_DIR / "media")))
# Screenshots, live-view images, traces (and every other file a run keeps) go through Django's default storage: files
# under MEDIA_ROOT, or with STORAGE_URL=s3://bucket/prefix an S3-compatible bucket that every web and worker machine
# shares (endpoint, region and keys from the AWS_* variables: agent_platform/object_storage.py). A malformed value
# stops every process here, the workers too (they run no system checks): none may keep files where the others cannot
# read them. Static files are not affected.
STORAGE_URL = envstr("STORAGE_URL")
try:
    STORAGE_BUCKET = object_storage.parse_storage_url(STORAGE_URL)
except ValueError as error:
    raise ImproperlyConfigured(str(error)) from None
STORAGES = object_storage.storages_setting(STORAGE_BUCKET)
# The ASGI app serves static files itself unless a front proxy does (SERVE_FILES=false).
SERVE_FILES = envbool("SERVE_FILES", True)

DATA_UPLOAD_MAX_MEMORY_SIZE = envint("MAX_REQUEST_BYTES", 256 * 1024, minimum=1024)

# Files (docs/files.md). A run's browser keeps at most RUN_DOWNLOAD_MAX_FILES downloads of at most
# RUN_DOWNLOAD_MAX_BYTES each; an upload (POST /api/v1/files) is at most FILE_UPLOAD_MAX_BYTES. The bytes go to
# Django's default storage. An upload's body is streamed to a temporary file past FILE_UPLOAD_MAX_MEMORY_SIZE,
# never held whole in memory.
RUN_DOWNLOAD_MAX_BYTES = envint("RUN_DOWNLOAD_MAX_BYTES", 50 * 1024 * 1024, minimum=1)
RUN_DOWNLOAD_MAX_FILES = envint("RUN_DOWNLOAD_MAX_FILES", 20, minimum=0)
FILE_UPLOAD_MAX_BYTES = envint("FILE_UPLOAD_MAX_BYTES", 25 * 1024 * 1024, minimum=1)
FILE_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024
# Where a worker keeps the files a run was given while it runs (copied from storage, for file_upload), one directory
# per run, removed when the run ends; downloads in flight are in Playwright's own artifacts directory until they are
# stored. Local to the worker's machine.
RUN_FILES_DIR = Path(envstr("RUN_FILES_DIR", str(VAR_DIR / "run-files")))

# The model. Without a key, `make run` starts the scripted demo model and points ANTHROPIC_BASE_URL at it.
ANTHROPIC_API_KEY = envstr("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = envstr("ANTHROPIC_BASE_URL")
DEFAULT_MODEL = envstr("DEFAULT_MODEL", "claude-sonnet-5-5")
SCRIPTED_MODEL = envbool("SCRIPTED_MODEL", False)
MODEL_MAX_RETRIES = envint("MODEL_MAX_RETRIES", 3, minimum=0)
MODEL_TIMEOUT_SECONDS = envint("MODEL_TIMEOUT_SECONDS", 120, minimum=1)
MODEL_MAX_TOKENS = envint("MODEL_MAX_TOKENS", 4096, minimum=256)
# How long a worker or web process trusts what the Models API said about a model (agent_platform.llm).
MODEL_PROFILE_TTL_SECONDS = envint("MODEL_PROFILE_TTL_SECONDS", 600, minimum=0)
# The judge and the outcome grader. Whether the judge sees the final viewport image follows the judge model's
# image_input capability, as the Models API reports it.
JUDGE_MODEL = envstr("JUDGE_MODEL") or DEFAULT_MODEL

# The browser.
BROWSER_EXECUTABLE = envstr("BROWSER_EXECUTABLE") or _default_browser_executable()
# The bundled demo site is served on a port of its own by `make run`; by default the agent's browser may reach that
# port of this machine and no other (not the app, its admin or API). Entries: host, host:port, range, range:port.
DEMO_PORT = envint("DEMO_PORT", 8001, minimum=1)
DEMO_BASE_URL = envstr("DEMO_BASE_URL", f"http://127.0.0.1:{DEMO_PORT}/")
BROWSER_ALLOWED_PRIVATE_HOSTS = envlist("BROWSER_ALLOWED_PRIVATE_HOSTS", f"127.0.0.1:{DEMO_PORT},localhost:{DEMO_PORT}")
# Private (non-public) addresses a workspace's upstream proxy may be on (runs.proxies), in the same syntax: an
# operator's own proxy on 10.x is listed here; a workspace member cannot aim the worker at other internal services.
PROXY_ALLOWED_PRIVATE_HOSTS = envlist("PROXY_ALLOWED_PRIVATE_HOSTS")
# How long the worker waits for an upstream proxy to accept a connection, and then to answer its handshake.
PROXY_CONNECT_TIMEOUT_SECONDS = envint("PROXY_CONNECT_TIMEOUT_SECONDS", 10, minimum=1, maximum=120)
BROWSER_ACTION_TIMEOUT_SECONDS = envint("BROWSER_ACTION_TIMEOUT_SECONDS", 30, minimum=1)
# The agent's viewport, WIDTHxHEIGHT: what its screenshots show (long-run tests use a small one to stay light).
BROWSER_VIEWPORT_WIDTH = envint("BROWSER_VIEWPORT_WIDTH", 1280, minimum=200)
BROWSER_VIEWPORT_HEIGHT = envint("BROWSER_VIEWPORT_HEIGHT", 800, minimum=200)
# Each worker records its Chromium processes here; a starting worker kills those of dead workers. Local to a machine.
BROWSER_PID_DIR = Path(envstr("BROWSER_PID_DIR", str(VAR_DIR / "browsers")))
# The live view's screenshot after each action turn: a JPEG of this quality (1-100), or a PNG with 0. Only people
# look at it; the judge's final view and the model's own screenshots stay PNG.
LIVE_VIEW_JPEG_QUALITY = envint("LIVE_VIEW_JPEG_QUALITY", 70, minimum=0, maximum=100)

# Browser sessions (browsers/, docs/browsers.md): a dedicated Chromium a client drives over CDP through the web tier.
# The worker's relay listens on BROWSER_RELAY_HOST (the address the web processes reach this worker on; empty: the
# address the worker reaches Redis from, runtime.browser_sessions.relay_host); the price of a browser-minute (every
# started minute of a session's life) in USD, 0 on a self-hosted install.
BROWSER_RELAY_HOST = envstr("BROWSER_RELAY_HOST")
BROWSER_SESSION_IDLE_TIMEOUT_SECONDS = envint("BROWSER_SESSION_IDLE_TIMEOUT_SECONDS", 300, minimum=5)
BROWSER_SESSION_MAX_SECONDS = envint("BROWSER_SESSION_MAX_SECONDS", 3600, minimum=10, maximum=4 * 3600)
BROWSER_MINUTE_PRICE_USD = Decimal(envstr("BROWSER_MINUTE_PRICE_USD", "0"))

# Webhooks: a failed delivery is retried after base, 2 x base, 4 x base ... seconds (at most max, which stays below
# the broker's visibility timeout) until 24 hours after the event.
WEBHOOK_QUEUE = envstr("WEBHOOK_QUEUE", "default")
WEBHOOK_RETRY_BASE_SECONDS = envint("WEBHOOK_RETRY_BASE_SECONDS", 30, minimum=1)
WEBHOOK_RETRY_MAX_SECONDS = envint("WEBHOOK_RETRY_MAX_SECONDS", 1800, minimum=1)
WEBHOOK_RETRY_WINDOW_SECONDS = envint("WEBHOOK_RETRY_WINDOW_SECONDS", 24 * 3600, minimum=1)
WEBHOOK_TIMEOUT_SECONDS = envint("WEBHOOK_TIMEOUT_SECONDS", 10, minimum=1)
# A pending delivery whose next attempt is this late lost its message (a Redis restart): the beat sends it again.
WEBHOOK_OVERDUE_SECONDS = envint("WEBHOOK_OVERDUE_SECONDS", 300, minimum=60)

# Prometheus metrics (docs/metrics.md). Without METRICS_TOKEN the web's /metrics answers 404 and no worker serves
# any; with it, a scrape carries `Authorization: Bearer <token>`. The database's numbers are computed at most once per
# METRICS_CACHE_SECONDS for the installation (kept in the shared cache); 0 reads the database on every scrape.
METRICS_TOKEN = envstr("METRICS_TOKEN")
METRICS_CACHE_SECONDS = envint("METRICS_CACHE_SECONDS", 10, minimum=0, maximum=3600)
# A worker process serves its own numbers (browser steps, model latency, contexts, egress refusals, queue wait) on
# this port: one port per worker process on a machine. 0 (the default) serves none.
WORKER_METRICS_PORT = envint("WORKER_METRICS_PORT", 0, minimum=0, maximum=65535)
WORKER_METRICS_ADDRESS = envstr("WORKER_METRICS_ADDRESS", "0.0.0.0")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {
        # httpx logs every request line with its URL; nothing secret is in it, but it drowns the worker's log.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "django.channels.server": {"level": "WARNING"},
        # The MCP SDK logs every stateless request's teardown at INFO; its warnings and errors still show.
        "mcp": {"level": "WARNING"},
        # The S3 client logs each signed request's headers (the access key id in Authorization) at DEBUG: kept quiet
        # even under LOG_LEVEL=DEBUG, so no credential reaches a log; its warnings and errors still show.
        "botocore": {"level": "WARNING"},
        "boto3": {"level": "WARNING"},
        "s3transfer": {"level": "WARNING"},
    },
}
