"""The one NinjaAPI: bearer API-key auth scoped to a workspace, and the error envelope every endpoint answers with."""

import json
import logging
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, cast

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from ninja import NinjaAPI, Schema, Swagger
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError
from ninja.openapi.docs import _csrf_needed
from ninja.parser import Parser
from ninja.security import HttpBearer
from ninja.throttling import AuthRateThrottle
from pydantic import BeforeValidator, Field, GetCoreSchemaHandler, GetJsonSchemaHandler, JsonValue
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import broker, ids
from .errors import (
    ERROR_CLASSES,
    AuthenticationFailed,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceError,
    UnsupportedMediaType,
)
from .lib.text import WHITE_SPACE
from .lib.timestamps import parse_rfc3339
from .models import ApiKey, Workspace

log = logging.getLogger(__name__)


class ApiRequest(HttpRequest):
    """A request whose API key authenticated: every endpoint's `request`, carrying what the key gives access to."""

    workspace: Workspace
    api_key: ApiKey


class KeyRateThrottle(AuthRateThrottle):
    """Requests per minute per API key, counted in the shared cache (Redis) so the limit holds across processes.

    Fails open, on purpose, while Redis is unreachable: the limit keeps one runaway client from crowding others out,
    it is not what keeps anyone out (the key is checked in the database first). Refusing every caller for the second
    or two Redis takes to restart would turn a blip into an outage of the whole API. Said once per outage in the log,
    not once per request, and once again when the limit is counted again."""

    # Whether this process's last check found the cache away (per process: each logs its own outage once).
    cache_away = False

    def __init__(self) -> None:
        super().__init__(f"{settings.API_RATE_LIMIT_PER_MINUTE}/m")

    def allow_request(self, request: HttpRequest) -> bool:
        # Read per request, so the limit follows the setting (and tests can lower it).
        self.num_requests, self.duration = self.parse_rate(f"{settings.API_RATE_LIMIT_PER_MINUTE}/m")
        try:
            allowed = super().allow_request(request)
        except broker.UNAVAILABLE:
            if not KeyRateThrottle.cache_away:
                KeyRateThrottle.cache_away = True
                log.warning("API rate limits are not checked while the shared cache (Redis) is unreachable")
            return True
        if KeyRateThrottle.cache_away:
            KeyRateThrottle.cache_away = False
            log.warning("API rate limits are checked again: the shared cache (Redis) is back")
        return allowed


class ApiKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        key = ApiKey.authenticate(token)
        if key is None:
            return None
        # last_used_at is informative; writing it at most once a minute keeps authentication off the write path.
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        # ninja hands authentication the plain request; what the key grants, set here, is what makes it an ApiRequest.
        granted = cast(ApiRequest, request)
        granted.workspace = key.workspace
        granted.api_key = key
        return key


def unstorable(value: Any) -> str | None:
    """Why a parsed JSON value cannot be stored as it is (NUL, lone surrogates, NaN/Infinity); None if it can."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return "the NUL character (\\u0000) is not allowed in strings"
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone UTF-16 surrogate, which is not valid Unicode"
        elif isinstance(item, float) and not math.isfinite(item):
            return "NaN and Infinity are not JSON numbers"
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


# Deeper than any launch body or output schema needs; JSON nested further is refused with this limit named, before
# it reaches code that walks it recursively.
JSON_MAX_DEPTH = 64


def json_depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members, refusing a name given twice (json.loads would keep the last one silently)."""
    members: dict[str, Any] = {}
    for name, value in pairs:
        if name in members:
            raise InvalidRequest(
                f"Invalid request body: the member {json.dumps(name)[:80]} appears twice in an object."
            )
        members[name] = value
    return members


def is_json_media_type(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (media_type.startswith("application/") and media_type.endswith("+json"))


class StrictJsonParser(Parser):
    """JSON bodies sent as JSON, within the size limit (also those sent without Content-Length) and nesting limit,
    with each member named once, that the database can store."""

    def parse_body(self, request: HttpRequest) -> Any:
        if len(request.body) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            raise RequestDataTooBig()
        content_type = request.META.get("CONTENT_TYPE", "")
        if request.body and not is_json_media_type(content_type):
            raise UnsupportedMediaType(
                f"The request body must be sent as application/json, not {content_type[:80] or 'without a type'}.",
                detail={"content_type": content_type[:200]},
            )
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidRequest(
                f"Invalid request body: not UTF-8 text (byte {error.start} cannot start or continue a character).",
                detail={"position": error.start},
            ) from None
        try:
            data = json.loads(text, object_pairs_hook=no_duplicate_keys)
        except RecursionError:
            raise too_deep() from None
        except json.JSONDecodeError as error:
            # The json module's words for what it expected, placed as an editor shows it (line and column from 1).
            raise InvalidRequest(
                f"Invalid request body: not valid JSON at line {error.lineno}, column {error.colno}: "
                f"{error.msg[:1].lower()}{error.msg[1:]}.",
                detail={"line": error.lineno, "column": error.colno},
            ) from None
        if json_depth(data) > JSON_MAX_DEPTH:
            raise too_deep()
        problem = unstorable(data)
        if problem:
            raise InvalidRequest(f"Invalid request body: {problem}.")
        return data


def too_deep() -> InvalidRequest:
    return InvalidRequest(
        f"Invalid request body: arrays and objects nest deeper than {JSON_MAX_DEPTH} levels.",
        detail={"max_depth": JSON_MAX_DEPTH},
    )


SWAGGER_UI = "vendor/swagger-ui-5.35.0"


class VendoredSwagger(Swagger):
    """Swagger UI from static/vendor (ninja's own page loads it from a CDN, blank offline)."""

    def render_page(self, request: HttpRequest, api: NinjaAPI, **kwargs: Any) -> HttpResponse:
        self.settings["url"] = self.get_openapi_url(api, kwargs)
        context = {
            "swagger_settings": json.dumps(self.settings),
            "api": api,
            "add_csrf": _csrf_needed(api),
            "swagger_js": f"{SWAGGER_UI}/swagger-ui-bundle.js",
            "swagger_css": f"{SWAGGER_UI}/swagger-ui.css",
        }
        return render(request, "api/swagger.html", context)


api = NinjaAPI(
    title="Pilothouse API",
    version="1",
    urls_namespace="api",
    auth=ApiKeyAuth(),
    docs_url="/docs",
    docs=VendoredSwagger(),
    throttle=[KeyRateThrottle()],
    parser=StrictJsonParser(),
)


class ErrorBody(Schema):
    type: str
    message: str
    detail: Any = None


class ErrorOut(Schema):
    """The one error envelope, for the OpenAPI document."""

    error: ErrorBody


# The error statuses any authenticated endpoint may answer with, for its `response=` declaration.
ERROR_RESPONSES = {400: ErrorOut, 401: ErrorOut, 404: ErrorOut, 413: ErrorOut, 429: ErrorOut}


def rfc3339_instant(value: Any) -> Any:
    """A query's date-time as the document says it (RFC 3339, offset required), read as its UTC instant; not a bare
    date, a naive time or a number, which pydantic alone would take (`to=0.5` as half a second after 1970)."""
    return parse_rfc3339(value) if isinstance(value, str) else value


# What each documented pattern means, said to a caller whose value does not match it instead of the expression.
PATTERN_MEANINGS: dict[str, str] = {}


def documented_pattern(pattern: str, meaning: str) -> str:
    """`pattern`, for a field's `pattern=` (the document shows it, pydantic checks it); a value that does not match
    is refused with `meaning` as the field's message."""
    PATTERN_MEANINGS[pattern] = meaning
    return pattern


# A text field that must hold more than white space: one character that is not what the services strip.
NOT_BLANK = documented_pattern(f"[^{WHITE_SPACE}]", "must not be empty or only white space")


@dataclass(frozen=True)
class PathId:
    """An id in a path (`Annotated[str, PathId("schedule", "sch")]`): the document gives the shape
    `ids.new_public_id(prefix)` makes (or one of the patterns `also` names, such as the v4 API's UUIDs), and an id of
    another shape is refused before any lookup. It names nothing, so the answer is 404 not_found like an id that does
    not exist, never a 400 that would tell the two apart (nor a NUL byte sent on to PostgreSQL)."""

    what: str
    prefix: str
    also: tuple[str, ...] = ()

    @property
    def pattern(self) -> str:
        return "|".join((ids.public_id_pattern(self.prefix), *self.also))

    def refuse_other_shapes(self, value: str) -> str:
        # Python's $ also matches before a final newline, which no id has.
        if "\n" in value or not re.search(self.pattern, value):
            raise NotFound(f"No {self.what} '{value[:60]}' in this workspace.")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.refuse_other_shapes, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {**handler(schema), "pattern": self.pattern}


# A date-time query parameter: `format: date-time` in the document, and exactly that accepted.
Instant = Annotated[datetime, BeforeValidator(rfc3339_instant)]


# The envelope type of a status nothing of ours raised (ninja's own HttpError), from the error classes themselves.
CODE_BY_STATUS = {error_class.status: error_class.code for error_class in ERROR_CLASSES}


def error_response(
    request: HttpRequest,
    status: int,
    code: str,
    message: str,
    detail: Any = None,
    headers: Mapping[str, str] | None = None,
) -> HttpResponse:
    body = {"error": {"type": code, "message": message, "detail": detail}}
    response = api.create_response(request, body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@api.exception_handler(ServiceError)
def on_service_error(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    """The one place a service error becomes an HTTP answer: its status, and the envelope with its code."""
    return error_response(request, exc.status, exc.code, exc.message, exc.detail, exc.headers)


@api.exception_handler(AuthenticationError)
def on_authentication_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return on_service_error(
        request,
        AuthenticationFailed(
            "A valid API key is required: send 'Authorization: Bearer <key>'. The key may be unknown, malformed, "
            "expired or revoked.",
            headers={"WWW-Authenticate": "Bearer"},
        ),
    )


# pydantic's error types for an operation's whole body being absent or not an object.
BODY_NOT_AN_OBJECT = {"missing", "model_attributes_type", "model_type", "dict_type"}


def validation_message(error: dict[str, Any]) -> str:
    """pydantic's message for one error, or ours where its own would quote a pattern or speak of models."""
    kind = error.get("type")
    if tuple(error.get("loc", ())) in (("body", "payload"), ("body",)) and kind in BODY_NOT_AN_OBJECT:
        return "a JSON object is required" if kind == "missing" else "must be a JSON object"
    if kind == "string_pattern_mismatch":
        pattern = (error.get("ctx") or {}).get("pattern", "")
        return PATTERN_MEANINGS.get(pattern, f"must match the pattern {pattern}")
    return str(error.get("msg", "invalid"))


def advertised(**limits: JsonValue) -> Any:
    """A field's limits shown in its JSON schema (the OpenAPI document, an MCP tool's input schema) without enforcing
    them there: the service's own rule refuses the value, in the same words through every door (runs.launch_rules)."""
    return Field(json_schema_extra=limits)


def describe_validation_errors(errors: list[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """One readable sentence naming the fields, and the per-field detail."""
    detail = []
    for error in errors:
        loc = [str(part) for part in error.get("loc", []) if part not in ("body", "payload", "query", "path")]
        detail.append({"field": ".".join(loc) or "(body)", "message": validation_message(error)})
    parts = [f"{item['field']}: {item['message']}" for item in detail[:5]]
    return "Invalid request: " + "; ".join(parts), detail


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    message, detail = describe_validation_errors(exc.errors)
    return on_service_error(request, InvalidRequest(message, detail=detail))


@api.exception_handler(Throttled)
def on_throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    retry_after = max(1, int(exc.wait or 1) + (1 if exc.wait and exc.wait % 1 else 0))
    return on_service_error(
        request,
        RateLimited(
            f"Too many requests for this API key; retry after {retry_after}s.",
            headers={"Retry-After": str(retry_after)},
        ),
    )


def body_too_large() -> PayloadTooLarge:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return PayloadTooLarge(f"The request body is larger than the limit of {limit} bytes.", detail={"limit": limit})


@api.exception_handler(RedisConnectionError)
@api.exception_handler(RedisTimeoutError)
def on_redis_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    """Redis away (a restart, a failover): the caller may retry shortly; what was committed stays committed."""
    log.warning("API request %s %s: Redis is unreachable (%s)", request.method, request.path, type(exc).__name__)
    return on_service_error(request, broker.unavailable())


@api.exception_handler(RequestDataTooBig)
def on_body_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return on_service_error(request, body_too_large())


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja wraps whatever the body parser raised in HttpError(400, "Cannot parse request body"); say why instead.
    if isinstance(exc.__cause__, RequestDataTooBig):
        return on_service_error(request, body_too_large())
    if isinstance(exc.__cause__, ServiceError):
        return on_service_error(request, exc.__cause__)
    if isinstance(exc.__cause__, ValueError | RecursionError):
        # The parser says what is wrong itself; anything else it raised is not worth quoting at a client.
        return on_service_error(request, InvalidRequest("Invalid request body: not valid JSON."))
    code = CODE_BY_STATUS.get(exc.status_code, InvalidRequest.code)
    return error_response(request, exc.status_code, code, str(exc))


class WorkspaceOut(Schema):
    id: str
    name: str


@api.get(
    "/workspace",
    response={200: WorkspaceOut, **ERROR_RESPONSES},
    tags=["workspace"],
    summary="The workspace of the calling API key",
)
def current_workspace(request: ApiRequest) -> dict[str, str]:
    return {"id": request.workspace.slug, "name": request.workspace.name}


@api.exception_handler(Http404)
def on_not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return on_service_error(request, NotFound(str(exc) or "Not found."))


api.add_router("/", "runs.api.router")
api.add_router("/", "runs.files_api.router")
api.add_router("/", "runs.share_api.router")
api.add_router("/", "judge.api.router")
api.add_router("/", "runs.proxy_api.router")
api.add_router("/", "runs.profiles.api.router")
api.add_router("/", "runs.recipes.api.router")
api.add_router("/", "agent_platform.usage_api.router")
api.add_router("/", "evals.api.router")
api.add_router("/", "evals.suites_api.router")
api.add_router("/", "webhooks.api.router")
api.add_router("/", "schedules.api.router")
api.add_router("/", "browsers.api.router")
