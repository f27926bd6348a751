"""System checks for settings that contradict each other, or that settings.py cannot judge on its own.

settings.py refuses a value that is malformed by itself (not an integer, below its minimum); these checks see what
needs another setting or another module's knowledge: the browser's allow-list syntax, the broker's visibility
timeout, the metrics token, the object storage's endpoint and credentials (a run's limits are checked by runs.checks, beside the launch that sets them). Each says what is wrong and how to put it right; `manage.py check` runs them, and so
does every management command and server start.
"""

import ipaddress
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from cryptography.fernet import Fernet
from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register

from agent_platform import object_storage
from agent_platform.netpolicy import address_class, parse_allowance, port_of


def _visibility_timeout() -> int | None:
    options = getattr(settings, "CELERY_BROKER_TRANSPORT_OPTIONS", None) or {}
    timeout = options.get("visibility_timeout")
    return timeout if isinstance(timeout, int) else None


@register(Tags.compatibility)
def check_models(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """A run and the judge each need a model to ask."""
    problems: list[CheckMessage] = []
    if not str(settings.DEFAULT_MODEL).strip():
        problems.append(
            Error(
                "DEFAULT_MODEL is empty: a run launched without a model has none to ask.",
                hint="Set DEFAULT_MODEL to a model id the Models API lists, or leave it unset for the default.",
                id="pilothouse.E001",
            )
        )
    if not str(settings.JUDGE_MODEL).strip():
        problems.append(
            Error(
                "JUDGE_MODEL is empty: the judge and the outcome grader have no model to ask.",
                hint="Set JUDGE_MODEL to a model id, or leave it unset to use DEFAULT_MODEL.",
                id="pilothouse.E002",
            )
        )
    return problems


@register(Tags.security)
def check_secrets_keys(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Every SECRETS_KEY entry is a Fernet key, or sealing and opening run secrets fails at launch and in the worker."""
    problems: list[CheckMessage] = []
    if not settings.SECRETS_KEYS:
        problems.append(
            Error(
                "SECRETS_KEYS is empty: run secrets cannot be sealed.",
                hint="Set SECRETS_KEY, or leave it unset for a key generated once under var/.",
                id="pilothouse.E004",
            )
        )
    for position, key in enumerate(settings.SECRETS_KEYS, start=1):
        try:
            Fernet(key.encode())
        except (ValueError, TypeError, AttributeError):
            problems.append(
                Error(
                    f"SECRETS_KEY entry {position} is not a Fernet key (32 bytes, URL-safe base64).",
                    hint='Generate one with `python -c "from cryptography.fernet import Fernet; '
                    'print(Fernet.generate_key().decode())"`; keep old keys after it while rotating.',
                    id="pilothouse.E005",
                )
            )
    return problems


@register(Tags.security)
def check_browser_allowed_private_hosts(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Each allow-list entry parses (the network guard refuses a list it cannot read); the demo site stays reachable."""
    problems = allowance_errors("BROWSER_ALLOWED_PRIVATE_HOSTS", "pilothouse.E006")
    if problems:
        return problems
    allowances = [parse_allowance(entry) for entry in settings.BROWSER_ALLOWED_PRIVATE_HOSTS]
    demo = settings.DEMO_BASE_URL
    host = (urlsplit(demo).hostname or "").rstrip(".").lower()
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
    except ValueError:
        address = None
    private = host == "localhost" or (address is not None and address_class(address) is not None)
    port = port_of(demo)
    if private and not any(allowance.allows(host, address, port) for allowance in allowances):
        problems.append(
            Warning(
                f"DEMO_BASE_URL ({demo}) is a private address that BROWSER_ALLOWED_PRIVATE_HOSTS does not allow: "
                "the agent's browser will be refused the bundled demo tasks.",
                hint=f"Add {host}:{port} to BROWSER_ALLOWED_PRIVATE_HOSTS, or leave the list unset for its default.",
                id="pilothouse.W002",
            )
        )
    return problems


def allowance_errors(setting: str, check_id: str) -> list[CheckMessage]:
    """An error for each entry of an allow-list setting (the browser's, the proxies') that does not parse."""
    problems: list[CheckMessage] = []
    for entry in getattr(settings, setting):
        try:
            parse_allowance(entry)
        except ValueError as error:
            problems.append(
                Error(
                    f"{setting}: {error}.",
                    hint="Entries are comma-separated: host, host:port, [ipv6]:port, an address range (10.1.0.0/16) "
                    "or range:port.",
                    id=check_id,
                )
            )
    return problems


@register(Tags.security)
def check_proxy_allowed_private_hosts(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Each entry of the proxies' allow-list parses: a list that cannot be read would refuse every workspace proxy."""
    return allowance_errors("PROXY_ALLOWED_PRIVATE_HOSTS", "pilothouse.E020")


@register(Tags.compatibility)
def check_webhook_retries(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """A webhook retry waits in the broker as a countdown; Redis hands a message on after its visibility timeout."""
    problems: list[CheckMessage] = []
    timeout = _visibility_timeout()
    longest_wait = settings.WEBHOOK_RETRY_MAX_SECONDS
    if timeout is not None and longest_wait >= timeout:
        problems.append(
            Error(
                f"WEBHOOK_RETRY_MAX_SECONDS ({longest_wait}) is not below the broker's "
                f"visibility timeout ({timeout} s, RUN_TIME_LIMIT_SECONDS + 600): Redis would hand a waiting retry "
                "to a second worker, and the delivery would be attempted twice.",
                hint="Lower WEBHOOK_RETRY_MAX_SECONDS, or raise RUN_TIME_LIMIT_SECONDS.",
                id="pilothouse.E007",
            )
        )
    if settings.WEBHOOK_RETRY_BASE_SECONDS > settings.WEBHOOK_RETRY_MAX_SECONDS:
        problems.append(
            Warning(
                f"WEBHOOK_RETRY_BASE_SECONDS ({settings.WEBHOOK_RETRY_BASE_SECONDS}) is above "
                f"WEBHOOK_RETRY_MAX_SECONDS ({settings.WEBHOOK_RETRY_MAX_SECONDS}): every retry waits the maximum.",
                hint="Set WEBHOOK_RETRY_BASE_SECONDS at or below WEBHOOK_RETRY_MAX_SECONDS.",
                id="pilothouse.W003",
            )
        )
    first_wait = min(settings.WEBHOOK_RETRY_BASE_SECONDS, settings.WEBHOOK_RETRY_MAX_SECONDS)
    window = settings.WEBHOOK_RETRY_WINDOW_SECONDS
    if window < first_wait:
        problems.append(
            Warning(
                f"WEBHOOK_RETRY_WINDOW_SECONDS ({window}) is shorter than the first "
                f"retry's wait ({first_wait} s): a failed delivery is never retried.",
                hint="Raise WEBHOOK_RETRY_WINDOW_SECONDS (default 24 hours).",
                id="pilothouse.W004",
            )
        )
    return problems


METRICS_TOKEN_MIN_CHARS = 24


@register(Tags.security)
def check_metrics(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """The metrics token is the only thing between a network and the installation's numbers: long enough to guess
    never; and a worker port without a token would serve nothing (agent_platform.metrics)."""
    problems: list[CheckMessage] = []
    token = settings.METRICS_TOKEN
    if token and len(token) < METRICS_TOKEN_MIN_CHARS:
        problems.append(
            Warning(
                f"METRICS_TOKEN is {len(token)} characters: shorter than {METRICS_TOKEN_MIN_CHARS}, it can be guessed.",
                hint='Generate one with `python -c "import secrets; print(secrets.token_urlsafe(32))"`.',
                id="pilothouse.W030",
            )
        )
    if settings.WORKER_METRICS_PORT and not token:
        problems.append(
            Warning(
                f"WORKER_METRICS_PORT is {settings.WORKER_METRICS_PORT} but METRICS_TOKEN is unset: workers serve no "
                "metrics without a token.",
                hint="Set METRICS_TOKEN on the web and worker machines alike, or unset WORKER_METRICS_PORT.",
                id="pilothouse.W031",
            )
        )
    return problems


@register(Tags.compatibility)
def check_object_storage(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """With STORAGE_URL=s3://... (settings.py refuses a malformed one), the endpoint is an http(s) URL and the S3
    client has credentials: found now, at start-up, not at the run's first screenshot."""
    storage = settings.STORAGES.get("default", {})
    if storage.get("BACKEND") != object_storage.S3_BACKEND:
        return []
    problems: list[CheckMessage] = []
    options = storage.get("OPTIONS", {})
    endpoint = options.get("endpoint_url")
    if endpoint:
        try:
            parts = urlsplit(endpoint)
            parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
            malformed = parts.scheme not in ("http", "https") or not parts.hostname
            carries_credentials = parts.username is not None or parts.password is not None
        except ValueError:
            malformed, carries_credentials = True, False
        if carries_credentials:
            problems.append(
                Error(
                    "The S3 endpoint URL carries credentials (not repeated here).",
                    hint="Give the endpoint as http(s)://host:port in AWS_ENDPOINT_URL, and the keys in "
                    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.",
                    id="pilothouse.E009",
                )
            )
        elif malformed:
            problems.append(
                Error(
                    f"The S3 endpoint {endpoint!r} is not an http:// or https:// URL with a host.",
                    hint="Set AWS_ENDPOINT_URL (or AWS_S3_ENDPOINT_URL, AWS_ENDPOINT_URL_S3) to the S3 server's "
                    "address, e.g. https://s3.example.internal:9000, or unset it for AWS itself.",
                    id="pilothouse.E009",
                )
            )
    try:
        source = object_storage.credentials_source()
    except ValueError as error:
        problems.append(
            Error(
                f"STORAGE_URL stores files in the bucket {options.get('bucket_name')!r}, but {error}",
                hint="Set both keys of the pair, or neither (boto's own credential chain then applies).",
                id="pilothouse.E008",
            )
        )
    else:
        if source is None:
            problems.append(
                Error(
                    f"STORAGE_URL stores files in the bucket {options.get('bucket_name')!r}, but no credentials "
                    "for it were found: every screenshot and trace would fail to save.",
                    hint="Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE with a shared credentials "
                    "file); on an instance whose role gives the credentials, set AWS_EC2_METADATA_DISABLED=false to "
                    "say so. Unset STORAGE_URL to keep files under MEDIA_ROOT.",
                    id="pilothouse.E008",
                )
            )
    return problems
