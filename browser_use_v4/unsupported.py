"""What Browser Use Cloud's v4 API has and Pilothouse's v4 API does not serve: each of those paths answers a
`{"detail": …}` naming the feature (the SDK raises it as BrowserUseError), and any other path under /api/v4 a JSON
404."""

import re

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agent_platform.errors import ServiceError


class NotInPilothouse(ServiceError):
    """A Browser Use v4 path Pilothouse's v4 API does not serve (yet)."""

    code = "not_supported"
    status = 501

    def __init__(self, feature: str) -> None:
        super().__init__(
            f"Pilothouse's v4 API does not serve {feature}; see docs/browser-use-compat.md for what it supports."
        )


# v4 paths (after /api/v4/) of what Pilothouse lacks, each with the feature its answer names. What Pilothouse has
# (profiles, workspace files, attachments, a session's queue, share link and purge) is served by the v4 API itself;
# launch fields naming what it lacks (managed proxy countries, extensions, 1Password, AgentMail, payments) are refused
# by the launch (api.refuse_missing), naming the field.
MISSING: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^browsers/[^/]+/downloads$"), "a browser's downloads over v4 (/browsers/{id}/downloads)"),
    (re.compile(r"^extensions(/.*)?$"), "browser extensions (/extensions)"),
    (re.compile(r"^integrations(/.*)?$"), "integrations (/integrations)"),
]
PATTERN = r"^api/v4/(?P<rest>(extensions|integrations)(/.*)?|browsers/[^/]+/downloads)$"


@csrf_exempt
def missing_feature(request: HttpRequest, rest: str) -> JsonResponse:
    feature = next(name for pattern, name in MISSING if pattern.match(rest))
    return JsonResponse({"detail": NotInPilothouse(feature).message}, status=NotInPilothouse.status)


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return JsonResponse(
        {"detail": f"{request.method} {request.path[:200]} is not a path of Pilothouse's v4 API."}, status=404
    )
