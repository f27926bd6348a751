"""Middleware of the APIs' own: an empty body read as `{}`, and answers Django's router gives and failures outside
ninja's exception handlers put in each API's error shape (v1's envelope, v4's `{"detail"}`)."""

import logging
from collections.abc import Callable

from django.db import DatabaseError, DataError, IntegrityError
from django.http import HttpRequest, HttpResponse, JsonResponse

from . import db
from .api import error_response
from .errors import MethodNotAllowed, NotFound, ServiceError

API_PREFIX = "/api/v1/"
V4_PREFIX = "/api/v4/"
# Methods whose body is a JSON object of fields (a PUT may carry a file's bytes, which may be none).
BODY_METHODS = frozenset({"POST", "PATCH"})
log = logging.getLogger(__name__)


def router_refusal(request: HttpRequest, response: HttpResponse) -> ServiceError | None:
    """What a 404 or 405 the router answered (before any endpoint ran) means to an API client; None otherwise."""
    if response.status_code == 405:
        allowed = response.get("Allow", "")
        return MethodNotAllowed(
            f"{request.method} is not allowed on {request.path}; allowed: {allowed or 'none'}.",
            detail={"allowed": [method.strip() for method in allowed.split(",") if method.strip()]},
        )
    if response.status_code == 404:
        return NotFound(f"No operation at {request.path[:200]}: the API's paths are in /api/v1/openapi.json.")
    return None


def api_router_refusals(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Django answers a path the API does not have (404) or a method a path does not take (405) with an HTML or plain
    page before any API handler runs; an API client reads the same envelope as for every other refusal, with the
    Allow header kept."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if (
            not request.path.startswith((API_PREFIX, V4_PREFIX))
            or response.get("Content-Type", "").startswith("application/json")  # already an error body
            or (refusal := router_refusal(request, response)) is None
        ):
            return response
        if request.path.startswith(V4_PREFIX):
            answer: HttpResponse = JsonResponse({"detail": refusal.message}, status=refusal.status)
        else:
            answer = error_response(request, refusal.status, refusal.code, refusal.message, refusal.detail)
        if allowed := response.get("Allow"):
            answer["Allow"] = allowed
        return answer

    return middleware


# The API doors whose clients read JSON, with the shape of their refusals: /api/v1's envelope, v4's {"detail"}.
JSON_DOORS = (API_PREFIX, V4_PREFIX)
DATABASE_AWAY = "The database cannot be reached just now; nothing was changed. Try again shortly."
SERVER_FAILED = "Something failed on our side; it was logged. Try again, and tell the operator if it persists."


def failure_answer(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    if request.path.startswith(API_PREFIX):
        return error_response(request, status, code, message)
    return JsonResponse({"detail": message}, status=status)


class ApiFailures:
    """Whatever fails under an API path (the database away, a bug, a middleware before the API's own handlers), its
    client reads JSON in the door's shape, never Django's HTML 500 page. The exception is logged here with its
    traceback, as Django would have logged it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith(JSON_DOORS)
            and response.status_code >= 500
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return failure_answer(request, 500, "server_error", SERVER_FAILED)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(JSON_DOORS):
            return None  # a page: Django's own error page
        log.error("%s %s failed", request.method, request.path, exc_info=exception)
        if isinstance(exception, DatabaseError) and not isinstance(exception, (DataError, IntegrityError)):
            return failure_answer(request, 503, "service_unavailable", DATABASE_AWAY)
        return failure_answer(request, 500, "server_error", SERVER_FAILED)


def empty_body_is_an_empty_object(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """A POST or PATCH to an API sent without a body (what `curl -X POST` sends) is read as `{}`: an operation
    whose fields are all optional then takes its defaults, and one with a required field names it, as for any body
    that lacks it. A body sent with another media type (an upload) is left alone."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if (
            request.method in BODY_METHODS
            and request.path.startswith((API_PREFIX, V4_PREFIX))
            and request.META.get("CONTENT_LENGTH") in (None, "", "0")  # a large body is never read here
            and request.META.get("CONTENT_TYPE", "").split(";")[0].strip() in ("", "application/json")
            and not request.body
        ):
            request._body = b"{}"  # Django's own cache of the read body, which ninja reads
            request.META["CONTENT_TYPE"] = "application/json"
        return get_response(request)

    return middleware


def connection_back_to_the_pool(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware, the outermost: the request's database connection goes back to the process's pool in the thread that
    used it, as the response leaves the views (db.release: only with the pool, and never inside a transaction).

    Django gives it back only when the request finishes, after the response has been sent: a slow client would hold a
    connection while its bytes trickle out. Error pages, which Django renders on another thread, give theirs back
    themselves (agent_platform.error_pages)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        try:
            return get_response(request)
        finally:
            db.release()

    return middleware
