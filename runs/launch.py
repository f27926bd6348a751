"""The one launch path: validate a run request, create its Session and Run in one transaction, enqueue it on commit."""

import hashlib
import hmac
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from agent_platform import broker, llm
from agent_platform.errors import Conflict, InvalidRequest, NotFound, ServiceUnavailable
from agent_platform.models import Workspace
from runs.schema import schema_problems, serialized_size

from . import lifecycle, queueing
from .events import emit
from .files import clean_file_ids
from .judging.models import Outcome
from .judging.services import clean_judge_context
from .models import Proxy, Run, Session
from .profiles.models import Profile
from .secret_box import seal
from .secrets import secrets_problem

log = logging.getLogger(__name__)

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
MODEL_DEPRECATED_EVENT = "model.deprecated"
IDEMPOTENCY_KEY_HOURS = 24

MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,99}$")
# A DNS host name (optionally a leading "*." wildcard for subdomains); IP literals are left to the network guard.
HOST_NAME = re.compile(r"^(\*\.)?(?=.{1,253}$)([A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")  # fmt: skip
IDEMPOTENCY_KEY = re.compile(r"^[\x21-\x7e]{1,200}$")


class IdempotencyKeyReused(Conflict):
    """The Idempotency-Key was used, within its lifetime, for a launch with other arguments (detail.code says so)."""


@dataclass(frozen=True)
class Launched:
    """What a launch gave: the run, and whether it is the one an earlier launch with the same Idempotency-Key
    created (the API then says Idempotent-Replayed)."""

    run: Run
    replayed: bool


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


def clean_max_cost_usd(max_cost_usd: object, workspace: Workspace) -> Decimal:
    """The run's cost cap in dollars: a positive number (or decimal string) up to 4 places; the workspace's default
    when omitted."""
    if max_cost_usd is None or max_cost_usd == "":
        return workspace.default_max_cost_usd
    if isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, int | float | str | Decimal):
        raise invalid("max_cost_usd", "must be a number of dollars such as 5 or 0.25")
    try:
        # str() first: a float's binary expansion must not become the cap (0.1 is 0.1, not 0.1000000000000000055…)
        cap = Decimal(str(max_cost_usd).strip())
    except InvalidOperation:
        raise invalid("max_cost_usd", "must be a number of dollars such as 5 or 0.25") from None
    if not cap.is_finite() or not Decimal(0) < cap <= MAX_COST_USD_LIMIT:
        raise invalid("max_cost_usd", f"must be more than 0 and at most {MAX_COST_USD_LIMIT} dollars")
    if cap != cap.quantize(Decimal("0.0001")):
        raise invalid("max_cost_usd", "has more than 4 decimal places")
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


def settle_proxy(session: Session, proxy: Proxy | None) -> None:
    """A follow-up keeps its session's proxy: naming another one (or one for a session without) is a conflict."""
    if proxy is None or session.proxy_id == proxy.pk:
        return
    had = f"goes out through proxy {session.proxy.public_id}" if session.proxy else "goes out without a proxy"
    raise Conflict(
        f"proxy_id: session {session.public_id} {had}; the proxy is a session property set when the session is "
        "created: omit proxy_id to keep it, or start a new session.",
        field="proxy_id",
        detail={"session_id": session.public_id, "proxy_id": session.proxy.public_id if session.proxy else None},
    )


# --- the launch ----------------------------------------------------------------------------------------------------


def resolve_session(
    workspace: Workspace,
    session_id: object,
    output_schema: dict[str, Any] | None,
    created_by: User | None,
    proxy: Proxy | None = None,
) -> Session:
    """The session the run belongs to, its schema and proxy settled: inherited, recorded, or a conflict."""
    if session_id is None or session_id == "":
        return Session.objects.create(
            workspace=workspace, output_schema=output_schema, created_by=created_by, proxy=proxy
        )
    if not isinstance(session_id, str):
        raise invalid("session_id", "must be a string")
    # Locked so two follow-ups naming different schemas for a schema-less session cannot both set one.
    session = Session.objects.select_for_update().for_workspace(workspace).filter(public_id=session_id).first()
    if session is None:
        raise NotFound(f"session_id: no session '{session_id}' in this workspace.", field="session_id")
    settle_proxy(session, proxy)
    if output_schema is None:
        return session
    if session.output_schema is None or not same_schema(session.output_schema, output_schema):
        # A session's schema is settled when it is created: a follow-up cannot add one to a session without one
        # (its earlier runs would start reporting a schema they never had), nor change it.
        had = "has no output schema" if session.output_schema is None else "already has a different output schema"
        raise Conflict(
            f"output_schema: session {session.public_id} {had}; the schema is a session property set when the "
            "session is created: omit output_schema to inherit it, or start a new session.",
            field="output_schema",
            detail={"session_id": session.public_id, "output_schema": session.output_schema},
        )
    return session


def warn_deprecated_model(run: Run, profile: llm.ModelProfile) -> None:
    """A run on a deprecated model is launched, with a warning event its page and the runs list show as a badge."""
    retires_at = profile.retires_at.isoformat() if profile.retires_at else None
    when = f" on {profile.retires_at:%Y-%m-%d}" if profile.retires_at else ""
    emit(
        run,
        MODEL_DEPRECATED_EVENT,
        {
            "model": profile.id,
            "retires_at": retires_at,
            "message": f"{profile.display_name} ({profile.id}) is deprecated and retires{when or ' soon'}; "
            "move to an active model.",
        },
    )


def launch_fingerprint(**arguments: object) -> str:
    """An HMAC (keyed, since the arguments include secrets) of a launch's arguments in canonical JSON."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hmac.new(settings.SECRET_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()


def idempotent_replay(workspace: Workspace, key: str, fingerprint: str) -> Run | None:
    """The run a live key created for the same arguments; None if the key is unused or expired (then freed)."""
    existing = Run.objects.for_workspace(workspace).filter(idempotency_key=key).first()
    if existing is None:
        return None
    if existing.created_at < timezone.now() - timedelta(hours=IDEMPOTENCY_KEY_HOURS):
        # expired: the key is free for a new launch (the unique constraint would refuse it otherwise)
        Run.objects.filter(pk=existing.pk, idempotency_key=key).update(idempotency_key=None)
        return None
    if existing.idempotency_fingerprint and not hmac.compare_digest(existing.idempotency_fingerprint, fingerprint):
        raise IdempotencyKeyReused(
            f"Idempotency-Key: this key was used within the last {IDEMPOTENCY_KEY_HOURS} hours for a launch with "
            f"other arguments (run {existing.public_id}); use a new key for a new launch.",
            field="Idempotency-Key",
            detail={"code": "idempotency_key_reused", "run_id": existing.public_id},
        )
    return existing


def launch_run(
    workspace: Workspace,
    *,
    task: object,
    session_id: object = None,
    start_url: object = "",
    model: object = None,
    effort: object = None,
    thinking: object = None,
    max_turns: object = None,
    output_schema: Any = None,
    judge: object = False,
    judge_context: object = None,
    outcome: object = None,
    allowed_domains: object = None,
    metadata: object = None,
    allow_javascript: object = False,
    secrets: object = None,
    created_by: User | None = None,
    idempotency_key: object = None,
    max_cost_usd: object = None,
    file_ids: object = None,
    proxy_id: object = None,
    profile_id: object = None,
    save_profile: object = None,
    fingerprinted: dict[str, object] | None = None,
) -> Launched:
    """Validate and create a run (and its session and outcome), and enqueue it once the transaction commits.

    Raises InvalidRequest, NotFound (session_id), Conflict (a session's schema) or ServiceUnavailable (the Models
    API, or the broker's Redis). With an idempotency_key, a retried launch in the same workspace with the same arguments gives the run the
    first one created, as `replayed`; other arguments are IdempotencyKeyReused; a key is forgotten
    IDEMPOTENCY_KEY_HOURS after use. `fingerprinted`: what else the caller launched from, in the key's fingerprint (a
    replay's recipe and parameters).
    """
    idempotency_key = clean_idempotency_key(idempotency_key)
    later_arguments = {
        "file_ids": file_ids,
        "proxy_id": proxy_id,
        "profile_id": profile_id,
        "save_profile": save_profile,
    }
    fingerprint = ""
    if idempotency_key is not None:
        fingerprint = launch_fingerprint(
            task=task, session_id=session_id, start_url=start_url, model=model, max_turns=max_turns,
            output_schema=output_schema, judge=judge, judge_context=judge_context, outcome=outcome,
            allowed_domains=allowed_domains, metadata=metadata, allow_javascript=allow_javascript, secrets=secrets,
            effort=effort, thinking=thinking, max_cost_usd=max_cost_usd,
            # Arguments added since keys were first fingerprinted count only when given, so a retried launch without
            # them keeps the fingerprint it had.
            **{name: value for name, value in later_arguments.items() if value is not None},
            **(fingerprinted or {}),
        )  # fmt: skip
        existing = idempotent_replay(workspace, idempotency_key, fingerprint)
        if existing is not None:
            return Launched(existing, replayed=True)

    model = clean_model(model)
    fields = {
        "task": clean_task(task),
        "start_url": clean_start_url(start_url),
        "model": model,
        "max_turns": clean_max_turns(max_turns),
        "judge_context": clean_judge_context(judge_context),
        "allowed_domains": clean_allowed_domains(allowed_domains),
        "metadata": clean_metadata(metadata),
        "secrets": seal(clean_secrets(secrets)),  # encrypted at rest; only the worker opens them
        "max_cost_usd": clean_max_cost_usd(max_cost_usd, workspace),
        "profile": profile_for_launch(workspace, profile_id, session_id=session_id),
        "save_profile": clean_save_profile(save_profile),
    }
    if not isinstance(judge, bool):
        raise invalid("judge", "must be true or false")
    if not isinstance(allow_javascript, bool):
        raise invalid("allow_javascript", "must be true or false")
    output_schema = clean_output_schema(output_schema)
    outcome = clean_outcome(outcome)
    given_files = clean_file_ids(workspace, file_ids)
    proxy = clean_proxy_id(workspace, proxy_id)
    # Last, so a launch with a plain mistake is refused without asking the Models API.
    profile = model_profile(model)
    fields["effort"] = clean_effort(effort, profile)
    fields["thinking"] = clean_thinking(thinking, profile)
    # A run reaches a worker through the broker: while Redis is away the launch is refused (503, Retry-After) rather
    # than accepted into a queue no worker can read. A broker lost between this check and the enqueue loses no run
    # either: runs.lifecycle.enqueue keeps it waiting, and it is sent once the broker is back.
    if not broker.reachable():
        raise broker.unavailable()

    try:
        with transaction.atomic():
            queueing.refuse_beyond_queued_limit(workspace)
            session = resolve_session(workspace, session_id, output_schema, created_by, proxy)
            run = Run.objects.create(
                workspace=workspace,
                session=session,
                created_by=created_by,
                idempotency_key=idempotency_key,
                idempotency_fingerprint=fingerprint,
                judge=judge,
                allow_javascript=allow_javascript,
                scripted=settings.SCRIPTED_MODEL,
                **fields,
            )
            if outcome is not None:
                # In this transaction, before enqueueing: the worker that picks the run up finds the rubric in place.
                Outcome.objects.create(run=run, **outcome)
            if given_files:
                run.given_files.set(given_files)
            if profile.deprecated:
                warn_deprecated_model(run, profile)
            # Admitted now if the workspace is under its concurrency limit, else when one of its runs ends.
            transaction.on_commit(lambda: lifecycle.admit(workspace.pk))
    except IntegrityError:
        # A concurrent launch with the same idempotency key won the race; its run is the answer.
        if idempotency_key is None:
            raise
        existing = idempotent_replay(workspace, idempotency_key, fingerprint)
        if existing is None:
            raise
        return Launched(existing, replayed=True)
    return Launched(run, replayed=False)
