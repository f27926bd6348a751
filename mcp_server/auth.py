"""Who calls /mcp: a workspace's API key as a bearer token, checked and rate-limited by the v1 API's own code, so a key
works (or is refused, or runs out of requests) the same through either door."""

import math

from agent_platform.api import ApiKeyAuth, ApiRequest, KeyRateThrottle
from agent_platform.errors import AuthenticationFailed, RateLimited
from agent_platform.models import ApiKey

# Where the endpoint leaves the admitted request in the ASGI scope; the SDK hands each tool the Starlette request built
# on that scope (ctx.request_context.request).
SCOPE_KEY = "pilothouse.api_request"

AUTHENTICATION_REQUIRED = (
    "A valid API key is required: send 'Authorization: Bearer <key>'. The key may be unknown, malformed, expired or "
    "revoked."
)


class McpRequest(ApiRequest):
    """An /mcp request as the v1 API's authentication and throttle see one: its key, and the key's workspace, which
    scopes everything the tools read and write."""

    auth: ApiKey


def admit(authorization: str) -> McpRequest:
    """The request of the key an Authorization header names, counted against the key's requests per minute.

    Raises AuthenticationFailed for a missing, unknown, expired or revoked key, RateLimited past the limit.
    """
    request = McpRequest()
    # ninja's bearer rule (the scheme in any case, then the token), parsed here so a header that is not a bearer token
    # is never logged: ninja logs it in DEBUG, and it may be a key sent without its scheme.
    scheme, _, token = authorization.partition(" ")
    key = ApiKeyAuth().authenticate(request, token) if scheme.lower() == "bearer" and token else None
    if key is None:
        raise AuthenticationFailed(AUTHENTICATION_REQUIRED, headers={"WWW-Authenticate": "Bearer"})
    # ninja's throttle counts requests per `request.auth`: the same count as the key's API requests.
    request.auth = key
    throttle = KeyRateThrottle()
    if not throttle.allow_request(request):
        retry_after = max(1, math.ceil(throttle.wait() or 1))
        raise RateLimited(
            f"Too many requests for this API key; retry after {retry_after}s.",
            headers={"Retry-After": str(retry_after)},
        )
    return request
