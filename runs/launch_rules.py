"""The launch contract: what a run may be asked for (LaunchRequest) and the one pipeline that checks it (check).

Every door (the form, /api/v1, Browser Use v4, MCP, schedules, batches, recipe replays, sign-in by hand) translates
its own names into a LaunchRequest and hands it to runs.launch.launch; schedules check theirs here without launching.
A rule is written once, so a wrong value gets the same message whichever door it came through.
"""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import QuerySet

from agent_platform import llm
from agent_platform.errors import InvalidRequest, ServiceUnavailable
from agent_platform.models import Workspace
from judge.services import clean_judge_context
from runs.schema import schema_problems, serialized_size

from .files import StoredFile, clean_file_ids
from .models import Proxy, Run
from .profiles.models import Profile
from .secrets import secrets_problem

TASK_MAX_CHARS = 20_000
START_URL_MAX_CHARS = 2000
MAX_TURNS_LIMIT = 200
OUTCOME_DESCRIPTION_MAX_CHARS = 5000
OUTCOME_RUBRIC_MAX_CHARS = 20_000
OUTCOME_MAX_ITERATIONS_DEFAULT = 3
OUTCOME_MAX_ITERATIONS_LIMIT = 20
ALLOWED_DOMAINS_MAX = 50
METADATA_MAX_BYTES = 16 * 1024
IDEMPOTENCY_KEY_MAX_CHARS = 200
MAX_COST_USD_LIMIT = Decimal(10_000)
# The browser window a launch may ask for, in CSS pixels (Browser Use v4's screenWidth and screenHeight bounds).
VIEWPORT_WIDTH_RANGE = (320, 6144)
VIEWPORT_HEIGHT_RANGE = (320, 3456)
# Every effort level the Models API can report for a model, lowest first; a launch takes those its model offers.
EFFORT_LEVELS = llm.EFFORT_LEVELS

MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,99}$")
# A DNS host name (optionally a leading "*." wildcard for subdomains); IP literals are left to the network guard.
HOST_NAME = re.compile(r"^(\*\.)?(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")  # fmt: skip
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")


def invalid(field: str, message: str, detail: Any = None) -> InvalidRequest:
    """The launch rules' refusal of one field (the evals and webhooks apps word their own checks with it too)."""
    return InvalidRequest.of_field(field, message, detail)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def same_schema(a: Any, b: Any) -> bool:
    return canonical_json(a) == canonical_json(b)


def schema_lint(schema: Any) -> list[dict[str, str]]:
    """The launch's own schema rules as plain dicts ({path, keyword, message}), for the form's lint-as-you-type."""
    return [problem.as_dict() for problem in schema_problems(schema)]


# --- field checks: each returns the cleaned value or raises InvalidRequest naming the field -------------------------


def clean_task(task: object) -> str:
    if not isinstance(task, str):
        raise invalid("task", "must be a string")
    task = task.strip()
    if not task:
        raise invalid("task", "is required and must not be empty")
    if len(task) > TASK_MAX_CHARS:
        raise invalid("task", f"is {len(task)} characters; the limit is {TASK_MAX_CHARS}")
    return task


def clean_start_url(start_url: object) -> str:
    if start_url is None:
        return ""
    if not isinstance(start_url, str):
        raise invalid("start_url", "must be a string")
    start_url = start_url.strip()
    if not start_url:
        return ""
    if len(start_url) > START_URL_MAX_CHARS:
        raise invalid("start_url", f"is longer than {START_URL_MAX_CHARS} characters")
    try:
        parts = urlsplit(start_url)
        host = parts.hostname
    except ValueError:
        raise invalid("start_url", "is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not host:
        raise invalid("start_url", "must be an http:// or https:// URL with a host")
    if any(ch.isspace() for ch in start_url):
        raise invalid("start_url", "must not contain whitespace")
    return start_url


def clean_model(model: object) -> str:
    if model is None or model == "":
        return settings.DEFAULT_MODEL
    if not isinstance(model, str) or not MODEL_NAME.match(model):
        raise invalid("model", "must be a model name such as 'claude-sonnet-5-5' (letters, digits, . _ : @ / -)")
    return model


def model_profile(model: str) -> llm.ModelProfile:
    """The model's profile from the Models API; unknown and retired models are refused naming `model`.

    When the Models API cannot be asked, the launch is refused as `service_unavailable` (HTTP 503) rather than
    accepted blind: a run on a model nobody checked would fail later, far from the form that chose it.
    """
    try:
        found = llm.profile(model)
    except llm.UnknownModel:
        raise invalid(
            "model", f"'{model}' is not a model the Models API knows; pick one of the active models"
        ) from None
    except llm.ProfilesUnavailable as error:
        raise ServiceUnavailable(f"model: {error}", field="model") from None
    if found.retired:
        retired = f" on {found.retires_at:%Y-%m-%d}" if found.retires_at else ""
        raise invalid("model", f"'{model}' was retired{retired} and can no longer run; pick one of the active models")
    return found


def model_choice(field: str, value: object, choices: Sequence[str], among: str, *, none: str = "none") -> str:
    """A value among the model's choices for `field` (its effort levels, its thinking modes); "" when omitted, which
    leaves the model's own default. `among` words the choices in the refusal, `none` what it says when there are none.
    """
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        raise invalid(field, "must be a string")
    if value not in choices:
        raise invalid(field, f"'{value}' is not {among}: {', '.join(choices) or none}")
    return value


def clean_effort(effort: object, profile: llm.ModelProfile) -> str:
    return model_choice(
        "effort",
        effort,
        profile.effort_levels,
        f"an effort level of {profile.id}",
        none="none (it takes no effort setting)",
    )


def clean_thinking(thinking: object, profile: llm.ModelProfile) -> str:
    return model_choice("thinking", thinking, profile.thinking_modes, f"a thinking mode {profile.id} accepts")


def clean_max_turns(max_turns: object) -> int:
    if max_turns is None:
        return settings.RUN_DEFAULT_MAX_TURNS
    if isinstance(max_turns, bool) or not isinstance(max_turns, int):
        raise invalid("max_turns", "must be an integer")
    if not 1 <= max_turns <= MAX_TURNS_LIMIT:
        raise invalid("max_turns", f"must be between 1 and {MAX_TURNS_LIMIT}")
    return max_turns


def clean_max_cost_usd(max_cost_usd: object, workspace: Workspace, field: str = "max_cost_usd") -> Decimal:
    """The run's cost cap in dollars: a positive number (or decimal string) up to 4 places; the workspace's default
    when omitted."""
    if max_cost_usd is None or max_cost_usd == "":
        return workspace.default_max_cost_usd
    if isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, int | float | str | Decimal):
        raise invalid(field, "must be a number of dollars such as 5 or 0.25")
    try:
        # str() first: a float's binary expansion must not become the cap (0.1 is 0.1, not 0.1000000000000000055…)
        cap = Decimal(str(max_cost_usd).strip())
    except InvalidOperation:
        raise invalid(field, "must be a number of dollars such as 5 or 0.25") from None
    if not cap.is_finite() or not Decimal(0) < cap <= MAX_COST_USD_LIMIT:
        raise invalid(field, f"must be more than 0 and at most {MAX_COST_USD_LIMIT} dollars")
    if cap != cap.quantize(Decimal("0.0001")):
        raise invalid(field, "has more than 4 decimal places")
    return cap


def clean_output_schema(output_schema: Any) -> dict[str, Any] | None:
    if output_schema is None:
        return None
    problems = schema_problems(output_schema)
    if problems:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        detail = [problem.as_dict() for problem in problems]
        raise invalid("output_schema", f"at {first.path}: {first.message}{more}", detail)
    checked: dict[str, Any] = output_schema  # without problems, it is an object schema
    return checked


def clean_outcome(outcome: object) -> dict[str, Any] | None:
    if outcome is None:
        return None
    if not isinstance(outcome, dict):
        raise invalid("outcome", "must be an object {description, rubric, max_iterations}")
    unknown = sorted(set(outcome) - {"description", "rubric", "max_iterations"})
    if unknown:
        raise invalid(f"outcome.{unknown[0]}", "is not a field of outcome (description, rubric, max_iterations)")
    cleaned: dict[str, Any] = {}
    for name, limit in (("description", OUTCOME_DESCRIPTION_MAX_CHARS), ("rubric", OUTCOME_RUBRIC_MAX_CHARS)):
        value = outcome.get(name)
        if not isinstance(value, str) or not value.strip():
            raise invalid(f"outcome.{name}", "is required and must be a non-empty string")
        if len(value) > limit:
            raise invalid(f"outcome.{name}", f"is {len(value)} characters; the limit is {limit}")
        cleaned[name] = value.strip()
    iterations = outcome.get("max_iterations")
    if iterations is None:
        iterations = OUTCOME_MAX_ITERATIONS_DEFAULT
    if isinstance(iterations, bool) or not isinstance(iterations, int):
        raise invalid("outcome.max_iterations", "must be an integer")
    if not 1 <= iterations <= OUTCOME_MAX_ITERATIONS_LIMIT:
        raise invalid("outcome.max_iterations", f"must be between 1 and {OUTCOME_MAX_ITERATIONS_LIMIT}")
    cleaned["max_iterations"] = iterations
    return cleaned


def clean_allowed_domains(allowed_domains: object) -> list[str]:
    if allowed_domains is None:
        return []
    if not isinstance(allowed_domains, list):
        raise invalid("allowed_domains", "must be a list of host names")
    if len(allowed_domains) > ALLOWED_DOMAINS_MAX:
        raise invalid("allowed_domains", f"has more than {ALLOWED_DOMAINS_MAX} host names")
    cleaned = []
    for index, domain in enumerate(allowed_domains):
        if not isinstance(domain, str) or not HOST_NAME.match(domain.strip()):
            raise invalid(f"allowed_domains[{index}]", "must be a host name such as 'shop.example.com'")
        domain = domain.strip().lower()
        if domain not in cleaned:
            cleaned.append(domain)
    return cleaned


def clean_metadata(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise invalid("metadata", "must be a JSON object")
    size = serialized_size(metadata)
    if size > METADATA_MAX_BYTES:
        raise invalid("metadata", f"is {size} bytes serialized; the limit is {METADATA_MAX_BYTES} bytes")
    return metadata


def clean_secrets(secrets: Any) -> dict[str, str]:
    if secrets is None:
        return {}
    problem = secrets_problem(secrets)
    if problem is not None:
        raise invalid(*problem)  # names the field, never the value
    return dict(secrets)


def clean_idempotency_key(key: object) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not IDEMPOTENCY_KEY.match(key):
        raise invalid(
            "Idempotency-Key", f"must be 1 to {IDEMPOTENCY_KEY_MAX_CHARS} printable ASCII characters without spaces"
        )
    return key


Named = TypeVar("Named", Profile, Proxy)


def named_in_workspace(
    objects: QuerySet[Named], field: str, public_id: object, what: str, listed_by: str
) -> Named | None:
    """The object of the workspace a launch names by id, or None when it names none. An unknown id is refused naming
    the field, in the same words as another workspace's, so those cannot be told apart from made-up ones."""
    if public_id is None or public_id == "":
        return None
    if not isinstance(public_id, str):
        raise invalid(field, "must be a string")
    found = objects.filter(public_id=public_id).first()
    if found is None:
        raise invalid(field, f"no {what} '{public_id[:60]}' in this workspace ({listed_by} lists them)")
    return found


def profile_for_launch(workspace: Workspace, profile_id: object, *, session_id: object) -> Profile | None:
    """The workspace's profile a launch names, or None; taken only on a session's first run."""
    if profile_id not in (None, "") and session_id:
        raise invalid(
            "profile_id",
            "is taken only on a session's first run: a follow-up continues its session's browser, which started "
            "from the first run's profile; omit profile_id, or start a new session.",
        )
    return named_in_workspace(
        Profile.objects.for_workspace(workspace), "profile_id", profile_id, "profile", "GET /api/v1/profiles"
    )


def clean_save_profile(save_profile: object) -> bool:
    if save_profile is None:
        return True
    if not isinstance(save_profile, bool):
        raise invalid("save_profile", "must be true or false")
    return save_profile


def clean_proxy_id(workspace: Workspace, proxy_id: object) -> Proxy | None:
    """The workspace's usable proxy the run goes out through (a deleted one is unknown), or None."""
    return named_in_workspace(
        Proxy.objects.for_workspace(workspace).usable(), "proxy_id", proxy_id, "proxy", "GET /api/v1/proxies"
    )


def clean_flag(field: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise invalid(field, "must be true or false")
    return value


def clean_viewport(field: str, value: object, bounds: tuple[int, int]) -> int | None:
    """One side of the browser window in CSS pixels, or None for the platform's default."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(field, "must be an integer number of pixels")
    if not bounds[0] <= value <= bounds[1]:
        raise invalid(field, f"must be between {bounds[0]} and {bounds[1]} pixels")
    return value


def clean_secret_domains(secret_domains: object, secrets: dict[str, str]) -> dict[str, list[str]]:
    """The hosts each secret may be typed into ({NAME: [host, ...]}; a host covers its subdomains); a secret left out
    may be typed anywhere the run may go."""
    if secret_domains is None:
        return {}
    if not isinstance(secret_domains, dict):
        raise invalid("secret_domains", "must be an object of NAME: [host names]")
    cleaned: dict[str, list[str]] = {}
    for name, domains in secret_domains.items():
        where = f"secret_domains.{str(name)[:64]}"
        if name not in secrets:
            raise invalid(where, "names no secret of this launch")
        try:
            hosts = clean_allowed_domains(domains)
        except InvalidRequest as error:
            raise invalid(where, error.message.split(": ", 1)[-1]) from None
        if not hosts:
            raise invalid(where, "must list at least one host name")
        if any(host.startswith("*.") for host in hosts):
            raise invalid(where, "takes bare host names (a host covers its subdomains)")
        cleaned[name] = hosts
    return cleaned


# --- the request and the pipeline ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LaunchRequest:
    """A run as a door asks for it, in the launch's own field names and with the values as the caller sent them
    (hence `object`): a door only translates names, and `check` alone judges values."""

    task: object = None
    session_id: object = None
    start_url: object = None
    model: object = None
    effort: object = None
    thinking: object = None
    max_turns: object = None
    max_cost_usd: object = None
    # The session's budget, what its runs together may spend (Browser Use v4's maxCostUsd): set on the session.
    session_max_cost_usd: object = None
    output_schema: object = None
    judge: object = False
    judge_context: object = None
    outcome: object = None
    allowed_domains: object = None
    metadata: object = None
    allow_javascript: object = False
    secrets: object = None
    secret_domains: object = None
    viewport_width: object = None
    viewport_height: object = None
    file_ids: object = None
    proxy_id: object = None
    profile_id: object = None
    save_profile: object = None
    idempotency_key: object = None
    # Set by the door itself, never taken from a caller's body.
    created_by: User | None = field(default=None, compare=False)
    kind: str = Run.Kind.AGENT

    @classmethod
    def of(cls, given: Mapping[str, object], **door: Any) -> "LaunchRequest":
        """A request from a caller's fields (a schedule's stored run, a test's dict); a name the launch does not
        take is refused naming it. `door` carries what the door itself sets (created_by, kind)."""
        unknown = sorted(set(given) - CALLER_FIELDS)
        if unknown:
            raise invalid(str(unknown[0])[:60], "is not a launch field")
        return cls(**{**given, **door})

    def given(self) -> dict[str, object]:
        """The caller's fields that differ from their defaults (what an idempotency key's fingerprint covers)."""
        return {
            spec.name: getattr(self, spec.name)
            for spec in fields(self)
            if spec.name in CALLER_FIELDS and getattr(self, spec.name) != spec.default
        }


CALLER_FIELDS = frozenset(spec.name for spec in fields(LaunchRequest)) - {"created_by", "kind"}


@dataclass(frozen=True)
class CheckedLaunch:
    """A request that passed every rule, its values cleaned and what it names found in the workspace."""

    kind: str
    task: str
    start_url: str
    model: str
    model_profile: llm.ModelProfile | None  # None for a run without a model (a sign-in by hand)
    effort: str
    thinking: str
    max_turns: int
    max_cost_usd: Decimal
    session_max_cost_usd: Decimal | None
    output_schema: dict[str, Any] | None
    judge: bool
    judge_context: list[str]
    outcome: dict[str, Any] | None
    allowed_domains: list[str]
    metadata: dict[str, Any]
    allow_javascript: bool
    secrets: dict[str, str]
    secret_domains: dict[str, list[str]]
    viewport_width: int | None
    viewport_height: int | None
    files: list[StoredFile]
    proxy: Proxy | None
    profile: Profile | None
    save_profile: bool
    session_id: str | None
    idempotency_key: str | None
    created_by: User | None


def check(workspace: Workspace, request: LaunchRequest) -> CheckedLaunch:
    """Every rule of the launch, in one order (the Models API last, so a plain mistake never waits on it).

    Raises InvalidRequest naming the first field at fault, or ServiceUnavailable when the Models API cannot be asked.
    """
    signing_in = request.kind == Run.Kind.SIGN_IN
    idempotency_key = clean_idempotency_key(request.idempotency_key)
    model = "" if signing_in else clean_model(request.model)
    task = clean_task(request.task)
    start_url = clean_start_url(request.start_url)
    if signing_in and not start_url:
        raise invalid("start_url", "is required: the page where the operator signs in")
    max_turns = clean_max_turns(request.max_turns)
    judge_context = clean_judge_context(request.judge_context)
    allowed_domains = clean_allowed_domains(request.allowed_domains)
    metadata = clean_metadata(request.metadata)
    secrets = clean_secrets(request.secrets)
    secret_domains = clean_secret_domains(request.secret_domains, secrets)
    max_cost_usd = clean_max_cost_usd(request.max_cost_usd, workspace)
    session_max_cost_usd = None
    if request.session_max_cost_usd is not None:
        session_max_cost_usd = clean_max_cost_usd(request.session_max_cost_usd, workspace, "session_max_cost_usd")
    profile = profile_for_launch(workspace, request.profile_id, session_id=request.session_id)
    save_profile = clean_save_profile(request.save_profile)
    judge = clean_flag("judge", request.judge)
    allow_javascript = clean_flag("allow_javascript", request.allow_javascript)
    viewport_width = clean_viewport("viewport_width", request.viewport_width, VIEWPORT_WIDTH_RANGE)
    viewport_height = clean_viewport("viewport_height", request.viewport_height, VIEWPORT_HEIGHT_RANGE)
    output_schema = clean_output_schema(request.output_schema)
    outcome = clean_outcome(request.outcome)
    files = clean_file_ids(workspace, request.file_ids)
    proxy = clean_proxy_id(workspace, request.proxy_id)
    session_id = clean_session_id(request.session_id)
    found = None if signing_in else model_profile(model)
    return CheckedLaunch(
        kind=request.kind,
        task=task,
        start_url=start_url,
        model=model,
        model_profile=found,
        effort=clean_effort(request.effort, found) if found else "",
        thinking=clean_thinking(request.thinking, found) if found else "",
        max_turns=max_turns,
        max_cost_usd=max_cost_usd,
        session_max_cost_usd=session_max_cost_usd,
        output_schema=output_schema,
        judge=judge,
        judge_context=judge_context,
        outcome=outcome,
        allowed_domains=allowed_domains,
        metadata=metadata,
        allow_javascript=allow_javascript,
        secrets=secrets,
        secret_domains=secret_domains,
        viewport_width=viewport_width,
        viewport_height=viewport_height,
        files=files,
        proxy=proxy,
        profile=profile,
        save_profile=save_profile,
        session_id=session_id,
        idempotency_key=idempotency_key,
        created_by=request.created_by,
    )


def clean_session_id(session_id: object) -> str | None:
    """The session a follow-up continues (found, and locked, when the run is created), or None for a new one."""
    if session_id is None or session_id == "":
        return None
    if not isinstance(session_id, str):
        raise invalid("session_id", "must be a string")
    return session_id
