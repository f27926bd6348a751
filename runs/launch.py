"""The one launch service: a LaunchRequest checked by its contract (runs.launch_rules), its Session and Run created in one
transaction, the run enqueued on commit. Nothing is written onto a run after this returns."""

import hashlib
import hmac
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from agent_platform import broker, llm
from agent_platform.errors import Conflict, NotFound
from agent_platform.models import Workspace
from judge.models import Outcome

from . import event_types, lifecycle, queueing
from .events import emit
from .launch_rules import CheckedLaunch, LaunchRequest, check, clean_idempotency_key, same_schema
from .models import Proxy, Run, Session
from .secret_box import seal

log = logging.getLogger(__name__)

IDEMPOTENCY_KEY_HOURS = 24


class IdempotencyKeyReused(Conflict):
    """The Idempotency-Key was used, within its lifetime, for a launch with other arguments (detail.code says so)."""


@dataclass(frozen=True)
class Launched:
    """What a launch gave: the run, and whether it is the one an earlier launch with the same Idempotency-Key
    created (the API then says Idempotent-Replayed)."""

    run: Run
    replayed: bool


# --- the launch ----------------------------------------------------------------------------------------------------


def resolve_session(
    workspace: Workspace,
    session_id: str | None,
    output_schema: dict[str, Any] | None,
    created_by: User | None,
    proxy: Proxy | None = None,
    budget: Decimal | None = None,
) -> Session:
    """The session the run belongs to, its schema and proxy settled (inherited, recorded, or a conflict) and its
    budget set when the launch gives one."""
    if session_id is None:
        return Session.objects.create(
            workspace=workspace, output_schema=output_schema, created_by=created_by, proxy=proxy, max_cost_usd=budget
        )
    # Locked so two follow-ups naming different schemas for a schema-less session cannot both set one.
    session = Session.objects.select_for_update().for_workspace(workspace).filter(public_id=session_id).first()
    if session is None:
        raise NotFound(f"session_id: no session '{session_id}' in this workspace.", field="session_id")
    settle_proxy(session, proxy)
    if budget is not None:
        session.max_cost_usd = budget
        session.save(update_fields=["max_cost_usd", "updated_at"])
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


def warn_deprecated_model(run: Run, profile: llm.ModelProfile) -> None:
    """A run on a deprecated model is launched, with a warning event its page and the runs list show as a badge."""
    retires_at = profile.retires_at.isoformat() if profile.retires_at else None
    when = f" on {profile.retires_at:%Y-%m-%d}" if profile.retires_at else ""
    emit(
        run,
        event_types.MODEL_DEPRECATED.name,
        {
            "model": profile.id,
            "retires_at": retires_at,
            "message": f"{profile.display_name} ({profile.id}) is deprecated and retires{when or ' soon'}; "
            "move to an active model.",
        },
    )


def launch_fingerprint(arguments: dict[str, object]) -> str:
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


def launch(
    workspace: Workspace, request: LaunchRequest, *, fingerprinted: Mapping[str, object] | None = None
) -> Launched:
    """Check and create a run (and its session and outcome), and enqueue it once the transaction commits.

    Raises InvalidRequest, NotFound (session_id), Conflict (a session's schema or proxy) or ServiceUnavailable (the
    Models API, or the broker's Redis). With an idempotency_key, a retried launch in the same workspace with the same
    fields gives the run the first one created, as `replayed`; other fields are IdempotencyKeyReused; a key is
    forgotten IDEMPOTENCY_KEY_HOURS after use. `fingerprinted`: what else the caller launched from, in the key's
    fingerprint (a replay's recipe and parameters).
    """
    idempotency_key = clean_idempotency_key(request.idempotency_key)
    fingerprint = ""
    if idempotency_key is not None:
        given = request.given()
        given.pop("idempotency_key")
        fingerprint = launch_fingerprint({**given, **(fingerprinted or {})})
        existing = idempotent_replay(workspace, idempotency_key, fingerprint)
        if existing is not None:
            return Launched(existing, replayed=True)

    checked = check(workspace, request)
    # A run reaches a worker through the broker: while Redis is away the launch is refused (503, Retry-After) rather
    # than accepted into a queue no worker can read. A broker lost between this check and the enqueue loses no run
    # either: runs.lifecycle.enqueue keeps it waiting, and it is sent once the broker is back.
    if not broker.reachable():
        raise broker.unavailable()

    try:
        with transaction.atomic():
            queueing.refuse_beyond_queued_limit(workspace)
            session = resolve_session(
                workspace,
                checked.session_id,
                checked.output_schema,
                checked.created_by,
                checked.proxy,
                checked.session_max_cost_usd,
            )
            run = Run.objects.create(
                workspace=workspace,
                session=session,
                idempotency_key=idempotency_key,
                idempotency_fingerprint=fingerprint,
                **run_fields(checked),
            )
            if checked.outcome is not None:
                # In this transaction, before enqueueing: the worker that picks the run up finds the rubric in place.
                Outcome.objects.create(run=run, **checked.outcome)
            if checked.files:
                run.given_files.set(checked.files)
            if checked.model_profile is not None and checked.model_profile.deprecated:
                warn_deprecated_model(run, checked.model_profile)
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


def run_fields(checked: CheckedLaunch) -> dict[str, Any]:
    """The Run's columns a checked launch sets, all of them at creation."""
    return {
        "kind": checked.kind,
        "created_by": checked.created_by,
        "task": checked.task,
        "start_url": checked.start_url,
        "model": checked.model,
        "effort": checked.effort,
        "thinking": checked.thinking,
        "max_turns": checked.max_turns,
        "max_cost_usd": checked.max_cost_usd,
        "judge": checked.judge,
        "judge_context": checked.judge_context,
        "allowed_domains": checked.allowed_domains,
        "metadata": checked.metadata,
        "allow_javascript": checked.allow_javascript,
        "secrets": seal(checked.secrets),  # encrypted at rest; only the worker opens them
        "secret_domains": checked.secret_domains,
        "viewport_width": checked.viewport_width,
        "viewport_height": checked.viewport_height,
        "profile": checked.profile,
        "save_profile": checked.save_profile,
        # A run without a model (a sign-in by hand) is driven by no model, scripted or not.
        "scripted": settings.SCRIPTED_MODEL and checked.model_profile is not None,
    }


def launch_run(workspace: Workspace, **fields: Any) -> Launched:
    """launch() with the request's fields as keywords (created_by and kind included), for scripts and tests."""
    return launch(workspace, LaunchRequest(**fields))
