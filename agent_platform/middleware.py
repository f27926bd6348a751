"""Middleware of the API's own: answers Django's router gives outside ninja's exception handlers, in the envelope."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .api import error_response
from .errors import MethodNotAllowed, NotFound, ServiceError

API_PREFIX = "/api/v1/"


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
            not request.path.startswith(API_PREFIX)
            or response.get("Content-Type", "").startswith("application/json")  # already an envelope
            or (refusal := router_refusal(request, response)) is None
        ):
            return response
        answer = error_response(request, refusal.status, refusal.code, refusal.message, refusal.detail)
        if allowed := response.get("Allow"):
            answer["Allow"] = allowed
        return answer

    return middleware
