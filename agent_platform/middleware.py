"""Middleware of the API's own: answers ninja gives outside its exception handlers, in the error envelope."""

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from .api import error_response
from .errors import MethodNotAllowed

API_PREFIX = "/api/v1/"


def api_method_not_allowed(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """ninja answers a method a path does not take with Django's plain-text 405 before any handler runs; an API
    client reads the same envelope as for every other refusal, with the Allow header kept."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if (
            response.status_code != 405
            or not request.path.startswith(API_PREFIX)
            or response.get("Content-Type", "").startswith("application/json")  # already an envelope
        ):
            return response
        allowed = response.get("Allow", "")
        refusal = MethodNotAllowed(
            f"{request.method} is not allowed on {request.path}; allowed: {allowed or 'none'}.",
            detail={"allowed": [method.strip() for method in allowed.split(",") if method.strip()]},
        )
        answer = error_response(request, refusal.status, refusal.code, refusal.message, refusal.detail)
        if allowed:
            answer["Allow"] = allowed
        return answer

    return middleware
