"""The /api/v4 NinjaAPI: Browser Use Cloud's v4 paths, headers, camelCase objects and `{"detail": …}` errors, each
endpoint calling the services v1 calls (launch_run, request_cancel, the runs' rows and events)."""

import uuid
from decimal import Decimal
from typing import Any, Literal

from django.db import transaction
from django.db.models import Count, Prefetch, QuerySet, Sum
from django.http import HttpRequest, HttpResponse
from ninja import Field, NinjaAPI, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError
from ninja.security import APIKeyHeader
from pydantic import ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from agent_platform import broker
from agent_platform.api import (
    ApiKeyAuth,
    ApiRequest,
    KeyRateThrottle,
    StrictJsonParser,
    VendoredSwagger,
    body_too_large,
    describe_validation_errors,
)
from agent_platform.errors import InvalidRequest, NotFound, ServiceError, ServiceUnavailable
from agent_platform.lib.money import exact_usd
from agent_platform.models import ApiKey, ModelRequest
from runs.launch import launch
from runs.launch_rules import LaunchRequest, clean_max_cost_usd
from runs.lifecycle import request_cancel
from runs.models import Event, Run, Session
from runs.reading import paginate
from runs.secrets import SECRET_NAME

from . import launching, mapping
from .unsupported import NotInPilothouse

PAGE_DEFAULT = 20
PAGE_MAX = 100
EVENTS_DEFAULT = 100
EVENTS_MAX = 1000
SEQ_MAX = 2**31 - 1


class BrowserUseKey(APIKeyHeader):
    """Browser Use's own header; the same ApiKey rows as v1's bearer token."""

    param_name = "X-Browser-Use-API-Key"

    def authenticate(self, request: HttpRequest, key: str | None) -> ApiKey | None:
        return ApiKeyAuth().authenticate(request, key) if key else None


api = NinjaAPI(
    title="Pilothouse: Browser Use v4 API",
    version="4",
    urls_namespace="browser_use_v4",
    auth=[BrowserUseKey(), ApiKeyAuth()],
    docs_url="/docs",
    docs=VendoredSwagger(),
    throttle=[KeyRateThrottle()],
    parser=StrictJsonParser(),
)


class DetailOut(Schema):
    """v4's error body."""

    detail: Any


ERRORS = {
    401: DetailOut,
    404: DetailOut,
    409: DetailOut,
    413: DetailOut,
    422: DetailOut,
    429: DetailOut,
    501: DetailOut,
}


def detail_response(
    request: HttpRequest, status: int, detail: Any, headers: dict[str, str] | None = None
) -> HttpResponse:
    response = api.create_response(request, {"detail": detail}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@api.exception_handler(ServiceError)
def on_service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    """A service's refusal as v4 answers it: the message as `detail`; a refused field is a 422, as in v4."""
    status = 422 if isinstance(exc, InvalidRequest) and exc.status == 400 else exc.status
    return detail_response(request, status, exc.message, exc.headers)


@api.exception_handler(AuthenticationError)
def on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return detail_response(
        request,
        401,
        "A valid API key is required: send 'X-Browser-Use-API-Key: <key>' (or 'Authorization: Bearer <key>'). "
        "The key may be unknown, malformed, expired or revoked.",
    )


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    message, _ = describe_validation_errors(exc.errors)
    return detail_response(request, 422, message)


@api.exception_handler(Throttled)
def on_throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    retry_after = str(max(1, int(exc.wait or 1)))
    return detail_response(request, 429, "Too many requests for this API key.", {"Retry-After": retry_after})


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja wraps what the body parser raised (too large, not JSON, nested too deep) in HttpError(400).
    cause = exc.__cause__
    if isinstance(cause, ServiceError):
        return on_service_error(request, cause)
    if cause is not None and type(cause).__name__ == "RequestDataTooBig":
        return on_service_error(request, body_too_large())
    if isinstance(cause, ValueError | RecursionError):
        return detail_response(request, 422, f"The request body is not valid JSON: {cause}")
    return detail_response(request, exc.status_code, str(exc))


@api.exception_handler(RedisConnectionError)
@api.exception_handler(RedisTimeoutError)
def on_redis_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Redis away: 503 with Retry-After, as the v1 API answers it (agent_platform.broker.unavailable)."""
    return on_service_error(request, broker.unavailable())


# --- ids -----------------------------------------------------------------------------------------------------------


def as_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def lookup(queryset: QuerySet[Any], value: str, what: str) -> Any:
    """The workspace's row with this v4 id (a UUID) or v1 id (run_…, sess_…); anything else is a 404."""
    found = queryset.filter(uuid=as_uuid(value)).first() if as_uuid(value) else queryset.filter(public_id=value).first()
    if found is None:
        raise NotFound(f"{what} {value[:60]} not found")
    return found


def runs_of(request: ApiRequest) -> QuerySet[Run]:
    return Run.objects.for_workspace(request.workspace).select_related("session").prefetch_related("judgments")


def sessions_of(request: ApiRequest) -> QuerySet[Session]:
    latest_first = Run.objects.order_by("-created_at", "-id")
    return (
        Session.objects.for_workspace(request.workspace)
        .annotate(run_count=Count("runs"))
        .filter(run_count__gt=0)  # v4's session always has a latest run; a launch always gives it one
        .prefetch_related(Prefetch("runs", queryset=latest_first, to_attr="latest_first"))
    )


# --- runs ----------------------------------------------------------------------------------------------------------

V4Status = Literal["queued", "dispatching", "running", "completed", "failed", "cancelled"]


class InlineSecretIn(Schema):
    model_config = ConfigDict(extra="forbid")
    type: Literal["inline", "onepassword"]
    value: StrictStr | None = None
    integrationId: StrictStr | None = None
    vaultId: StrictStr | None = None
    itemId: StrictStr | None = None
    fieldId: StrictStr | None = None


class SecretBindingIn(Schema):
    model_config = ConfigDict(extra="forbid")
    alias: StrictStr
    source: InlineSecretIn
    allowedDomains: list[StrictStr] = Field(..., min_length=1, max_length=20)


class BrowserSettingsIn(Schema):
    model_config = ConfigDict(extra="forbid")
    profileId: StrictStr | None = None
    proxyCountryCode: StrictStr | None = None
    customProxy: dict[str, Any] | None = None
    screenWidth: StrictInt | None = None
    screenHeight: StrictInt | None = None
    allowResizing: StrictBool | None = None
    record: StrictBool | None = None
    extensionIds: list[StrictStr] | None = None


class JudgeIn(Schema):
    model_config = ConfigDict(extra="forbid")
    context: StrictStr | None = Field(None, max_length=10_000)


class RunCreateIn(Schema):
    """v4's RunCreateRequest; what Pilothouse lacks is refused naming the feature."""

    model_config = ConfigDict(extra="forbid")
    task: StrictStr = Field(..., min_length=1)
    model: StrictStr | None = None
    modelParams: dict[str, Any] | None = None
    outputSchema: dict[str, Any] | None = None
    sessionId: StrictStr | None = None
    workspaceId: StrictStr | None = None
    browserSettings: BrowserSettingsIn | None = None
    keepAlive: StrictInt | None = None
    agentmail: StrictBool | None = None
    agentcardWalletId: StrictStr | None = None
    stripeLinkConnectionId: StrictStr | None = None
    attachedFileIds: list[StrictStr] | None = None
    secretBindings: list[SecretBindingIn] | None = Field(None, max_length=20)
    opVaultId: StrictStr | None = None
    opVaultAllowedDomains: list[StrictStr] | None = None
    judge: JudgeIn | None = None
    maxCostUsd: StrictInt | StrictFloat | StrictStr | None = None


class RunCreateOut(Schema):
    id: uuid.UUID
    status: V4Status
    model: str
    sessionId: uuid.UUID
    workspaceId: uuid.UUID
    eventsUrl: str
    missingFileIds: list[uuid.UUID] | None = None


class RunSummaryOut(Schema):
    id: uuid.UUID
    task: str
    title: str | None
    model: str
    modelParams: dict[str, Any] | None
    contextLimit: int
    status: V4Status
    result: str | None
    output: Any = None
    outputSchema: dict[str, Any] | None
    error: str | None
    sessionId: uuid.UUID
    workspaceId: uuid.UUID | None
    attachedFileIds: list[uuid.UUID] | None
    judgement: dict[str, Any] | None
    totalInputTokens: int
    totalOutputTokens: int
    totalCostUsd: str = Field(description="Exact decimal string, in US dollars.")
    createdAt: Any
    updatedAt: Any


class RunStatusOut(Schema):
    status: V4Status


class RunListOut(Schema):
    runs: list[RunSummaryOut]
    nextCursor: str | None
    hasMore: bool


class RunEventOut(Schema):
    runId: uuid.UUID
    id: int
    ts: Any
    type: str
    data: dict[str, Any]


class RunEventsOut(Schema):
    events: list[RunEventOut]
    nextAfter: int | None
    hasMore: bool


def refuse_missing(body: RunCreateIn) -> None:
    """Launch fields naming something Pilothouse does not have: refused with the feature named, never ignored."""
    settings = body.browserSettings
    missing = [
        (bool(body.agentmail), "AgentMail inboxes (agentmail)"),
        (body.agentcardWalletId is not None or body.stripeLinkConnectionId is not None, "payments"),
        (body.opVaultId is not None or body.opVaultAllowedDomains is not None, "1Password vaults (opVaultId)"),
        (settings is not None and settings.proxyCountryCode is not None, "proxies (browserSettings.proxyCountryCode)"),
        (settings is not None and settings.customProxy is not None, "proxies (browserSettings.customProxy)"),
        (settings is not None and bool(settings.extensionIds), "browser extensions (browserSettings.extensionIds)"),
        (settings is not None and bool(settings.record), "recordings (browserSettings.record)"),
        (settings is not None and bool(settings.allowResizing), "resizing over CDP (browserSettings.allowResizing)"),
    ]
    for source in body.secretBindings or []:
        missing.append((source.source.type == "onepassword", "1Password secrets (secretBindings source onepassword)"))
    for present, feature in missing:
        if present:
            raise NotInPilothouse(feature)


def launch_params(body: RunCreateIn) -> dict[str, Any]:
    """v4's modelParams as the launch's effort and thinking (Anthropic's own names: output_config.effort and
    thinking.type); any other parameter is refused, since Pilothouse passes none through."""
    params = dict(body.modelParams or {})
    found: dict[str, Any] = {}
    thinking = params.pop("thinking", None)
    if thinking is not None:
        if not isinstance(thinking, dict) or set(thinking) != {"type"}:
            raise InvalidRequest.of_field("modelParams.thinking", 'must be {"type": MODE}')
        found["thinking"] = thinking["type"]
    output_config = params.pop("output_config", None)
    if output_config is not None:
        if not isinstance(output_config, dict) or set(output_config) != {"effort"}:
            raise InvalidRequest.of_field("modelParams.output_config", 'must be {"effort": LEVEL}')
        found["effort"] = output_config["effort"]
    if params:
        raise InvalidRequest.of_field(
            f"modelParams.{sorted(params)[0]}",
            "is not a parameter Pilothouse passes to the model; only thinking.type and output_config.effort are",
        )
    return found


def secret_bindings(body: RunCreateIn) -> tuple[dict[str, str], dict[str, list[str]], dict[str, int]]:
    """v4's secret bindings as the launch's secrets ({ALIAS: value}, the alias upper-cased) and secret_domains (the
    hosts each may be typed into), with each secret's binding index for naming a refusal as the caller wrote it."""
    secrets: dict[str, str] = {}
    domains: dict[str, list[str]] = {}
    index_of: dict[str, int] = {}
    for index, binding in enumerate(body.secretBindings or []):
        name = binding.alias.upper()
        field = f"secretBindings[{index}]"
        if not SECRET_NAME.match(name):
            raise InvalidRequest.of_field(
                f"{field}.alias", "must be letters, digits and _ (at most 64), e.g. shop_password"
            )
        if name in secrets:
            raise InvalidRequest.of_field(f"{field}.alias", f"{binding.alias} is bound twice")
        if binding.source.value is None:
            raise InvalidRequest.of_field(f"{field}.source.value", "is required for an inline secret")
        secrets[name] = binding.source.value
        domains[name] = list(binding.allowedDomains)
        index_of[name] = index
    return secrets, domains, index_of


def v4_launch_refusal(error: ServiceError, binding_index: dict[str, int]) -> ServiceError:
    """The launch contract's refusal named as the v4 caller wrote the field (a secret's hosts: its binding)."""
    field = error.field or ""
    if isinstance(error, InvalidRequest) and field.startswith("secret_domains."):
        index = binding_index.get(field.removeprefix("secret_domains."), 0)
        return InvalidRequest.of_field(
            f"secretBindings[{index}].allowedDomains", error.message.split(": ", 1)[-1], error.detail
        )
    return mapping.v4_refusal(error)


@api.post("/runs", response={202: RunCreateOut, **ERRORS}, tags=["runs"], summary="Create a run")
def create_run(request: ApiRequest, body: RunCreateIn) -> Status[dict[str, Any]]:
    refuse_missing(body)
    params = launch_params(body)
    secrets, domains, binding_index = secret_bindings(body)
    session_id: str | None = None
    budget: object = body.maxCostUsd
    if body.sessionId is not None:
        session = lookup(Session.objects.for_workspace(request.workspace), body.sessionId, "Session")
        session_id = session.public_id
        if budget is None:
            # A follow-up keeps its session's budget; each run may spend up to it (the session's sum is checked too).
            budget = session.max_cost_usd
    settings = body.browserSettings
    # Files and the profile, as the launch's file_ids, profile_id and save_profile (browser_use_v4.launching).
    given = launching.launch_files(request.workspace, body.workspaceId, body.attachedFileIds)
    given |= launching.launch_profile(request.workspace, settings.profileId if settings else None)
    launch_request = LaunchRequest(
        task=body.task,
        session_id=session_id,
        model=body.model,
        output_schema=body.outputSchema,
        judge=body.judge is not None,
        judge_context=mapping.judge_statements(body.judge.context or "") if body.judge is not None else None,
        secrets=secrets or None,
        secret_domains=domains or None,
        max_cost_usd=budget,
        session_max_cost_usd=body.maxCostUsd,
        viewport_width=settings.screenWidth if settings else None,
        viewport_height=settings.screenHeight if settings else None,
        **params,
        **given,
    )
    try:
        run = launch(request.workspace, launch_request).run
    except (InvalidRequest, NotFound) as error:
        raise v4_launch_refusal(error, binding_index) from None
    return Status(
        202,
        {
            "id": run.uuid,
            "status": mapping.STATUS[Run.Status(run.status)],
            "model": run.model,
            "sessionId": run.session.uuid,
            "workspaceId": mapping.workspace_uuid(run.workspace_id),
            "eventsUrl": f"/api/v4/runs/{run.uuid}/events",
        },
    )


class RunFilters(Schema):
    sessionId: str | None = None
    cursor: str | None = None
    limit: int = Field(PAGE_DEFAULT, ge=1, le=PAGE_MAX)


@api.get("/runs", response={200: RunListOut, **ERRORS}, tags=["runs"], summary="List runs, newest first")
def list_runs(request: ApiRequest, filters: Query[RunFilters]) -> dict[str, Any]:
    runs = runs_of(request)
    if filters.sessionId is not None:
        runs = runs.filter(
            session=lookup(Session.objects.for_workspace(request.workspace), filters.sessionId, "Session")
        )
    page = paginate(runs, filters.cursor, filters.limit)
    return {
        "runs": [mapping.run_summary(run) for run in page.rows],
        "nextCursor": page.next_cursor,
        "hasMore": page.has_more,
    }


@api.get("/runs/{run_id}", response={200: RunSummaryOut, **ERRORS}, tags=["runs"], summary="A run")
def get_run(request: ApiRequest, run_id: str) -> dict[str, Any]:
    return mapping.run_summary(lookup(runs_of(request), run_id, "Run"))


@api.get("/runs/{run_id}/status", response={200: RunStatusOut, **ERRORS}, tags=["runs"], summary="A run's status")
def run_status(request: ApiRequest, run_id: str) -> dict[str, Any]:
    run = lookup(Run.objects.for_workspace(request.workspace).only("status"), run_id, "Run")
    return {"status": mapping.STATUS[Run.Status(run.status)]}


class EventFilters(Schema):
    after: int = Field(0, ge=0, le=SEQ_MAX, description="Events with an id greater than this (nextAfter).")
    limit: int = Field(EVENTS_DEFAULT, ge=1, le=EVENTS_MAX)


@api.get(
    "/runs/{run_id}/events",
    response={200: RunEventsOut, **ERRORS},
    tags=["runs"],
    summary="A run's events in order",
    description="An event's id is its seq in the run (v1's seq). browser.ready is said once, just before the "
    "run's first agent event (the browser is open by then), under that event's id; a page holding it may hold "
    "one event more than limit.",
)
def list_events(request: ApiRequest, run_id: str, filters: Query[EventFilters]) -> dict[str, Any]:
    run = lookup(Run.objects.for_workspace(request.workspace), run_id, "Run")
    events = list(Event.objects.filter(run=run, seq__gt=filters.after).order_by("seq")[: filters.limit + 1])
    has_more = len(events) > filters.limit
    events = events[: filters.limit]
    first_agent = (
        Event.objects.filter(run=run, type__startswith="agent.").order_by("seq").values_list("seq", flat=True).first()
    )
    out = []
    for event in events:
        if event.seq == first_agent:
            out.append(mapping.run_event(run, event, mapping.BROWSER_READY) | {"data": {}})
        out.append(mapping.run_event(run, event))
    return {"events": out, "nextAfter": events[-1].seq if events else filters.after, "hasMore": has_more}


@api.post("/runs/{run_id}/cancel", response={200: RunSummaryOut, **ERRORS}, tags=["runs"], summary="Cancel a run")
def cancel_run(request: ApiRequest, run_id: str) -> dict[str, Any]:
    run = lookup(runs_of(request), run_id, "Run")
    request_cancel(run)
    return mapping.run_summary(runs_of(request).get(pk=run.pk))


# --- sessions ------------------------------------------------------------------------------------------------------


class SessionInfoOut(Schema):
    sessionId: uuid.UUID
    workspaceId: uuid.UUID | None
    latestRunId: uuid.UUID
    task: str
    title: str | None
    status: V4Status
    createdAt: Any
    updatedAt: Any


class SessionListOut(Schema):
    sessions: list[SessionInfoOut]
    nextCursor: str | None
    hasMore: bool


class SessionFilters(Schema):
    cursor: str | None = None
    limit: int = Field(PAGE_DEFAULT, ge=1, le=PAGE_MAX)


class SessionUpdateIn(Schema):
    model_config = ConfigDict(extra="forbid")
    title: StrictStr | None = Field(None, max_length=255)


class SessionCostOut(Schema):
    sessionId: uuid.UUID
    numRuns: int
    llmCostUsd: str
    searchCostUsd: str
    browserCostUsd: str
    proxyCostUsd: str
    proxyUsedMb: str
    totalCostUsd: str


class CostCapIn(Schema):
    model_config = ConfigDict(extra="forbid")
    maxCostUsd: StrictInt | StrictFloat | StrictStr


class CostCapOut(Schema):
    sessionId: uuid.UUID
    maxCostUsd: str


def session_out(session: Session) -> dict[str, Any]:
    return mapping.session_info(session, session.latest_first[0])  # type: ignore[attr-defined]  # sessions_of's prefetch


@api.get("/sessions", response={200: SessionListOut, **ERRORS}, tags=["sessions"], summary="List sessions")
def list_sessions(request: ApiRequest, filters: Query[SessionFilters]) -> dict[str, Any]:
    page = paginate(sessions_of(request), filters.cursor, filters.limit)
    return {
        "sessions": [session_out(session) for session in page.rows],
        "nextCursor": page.next_cursor,
        "hasMore": page.has_more,
    }


@api.get("/sessions/{session_id}", response={200: SessionInfoOut, **ERRORS}, tags=["sessions"], summary="A session")
def get_session(request: ApiRequest, session_id: str) -> dict[str, Any]:
    return session_out(lookup(sessions_of(request), session_id, "Session"))


@api.patch("/sessions/{session_id}", response={200: SessionInfoOut, **ERRORS}, tags=["sessions"], summary="Rename")
def update_session(request: ApiRequest, session_id: str, body: SessionUpdateIn) -> dict[str, Any]:
    session = lookup(sessions_of(request), session_id, "Session")
    if "title" in body.model_fields_set:
        session.title = body.title or ""
        session.save(update_fields=["title", "updated_at"])
    return session_out(session)


@api.delete(
    "/sessions/{session_id}", response={204: None, 503: DetailOut, **ERRORS}, tags=["sessions"], summary="Delete"
)
def delete_session(request: ApiRequest, session_id: str) -> Status[None]:
    """Cancels the session's active runs, then deletes it with its runs and events; the bill keeps their model
    requests (detached from the deleted runs). While a run is still stopping the answer is 503 with Retry-After."""
    session = lookup(Session.objects.for_workspace(request.workspace), session_id, "Session")
    for run in session.runs.active():
        request_cancel(run)
    if session.runs.active().exists():
        raise ServiceUnavailable(
            "The session's run is stopping; retry the delete in a moment.", headers={"Retry-After": "1"}
        )
    with transaction.atomic():
        ModelRequest.objects.filter(run__session=session).update(run=None)
        session.delete()
    return Status(204, None)


@api.get("/sessions/{session_id}/cost", response={200: SessionCostOut, **ERRORS}, tags=["sessions"], summary="Cost")
def session_cost(request: ApiRequest, session_id: str) -> dict[str, Any]:
    session = lookup(Session.objects.for_workspace(request.workspace), session_id, "Session")
    totals = session.runs.aggregate(runs=Count("id"), cost=Sum("cost_usd"))
    llm_cost = exact_usd(totals["cost"] or Decimal(0))
    return {
        "sessionId": session.uuid,
        "numRuns": totals["runs"],
        "llmCostUsd": llm_cost,
        # Pilothouse bills model requests only: its browsers are the worker's own, without search or proxies.
        "searchCostUsd": "0",
        "browserCostUsd": "0",
        "proxyCostUsd": "0",
        "proxyUsedMb": "0",
        "totalCostUsd": llm_cost,
    }


def v4_budget(value: object, request: ApiRequest) -> Decimal:
    """A maxCostUsd in dollars (a number or a decimal string), refused under its v4 name."""
    try:
        return clean_max_cost_usd(value, request.workspace)
    except InvalidRequest as error:
        raise mapping.v4_refusal(error) from None


@api.patch("/sessions/{session_id}/cost-cap", response={200: CostCapOut, **ERRORS}, tags=["sessions"], summary="Budget")
def session_cost_cap(request: ApiRequest, session_id: str, body: CostCapIn) -> dict[str, Any]:
    """The session's budget: what its runs together may cost, spending so far included."""
    session = lookup(Session.objects.for_workspace(request.workspace), session_id, "Session")
    budget = v4_budget(body.maxCostUsd, request)
    session.max_cost_usd = budget
    session.save(update_fields=["max_cost_usd", "updated_at"])
    return {"sessionId": session.uuid, "maxCostUsd": exact_usd(budget)}


# /browsers: Pilothouse's browser sessions (browsers/) as v4 shapes them; added last, it reads this module's errors.
api.add_router("", "browser_use_v4.browsers.router")
