"""What Browser Use Cloud has and Pilothouse does not: each of its v4 paths answers a `{"detail": …}` naming the
missing feature (the SDK raises it as BrowserUseError), and any other path under /api/v4 a JSON 404."""

import re

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from agent_platform.errors import ServiceError


class NotInPilothouse(ServiceError):
    """A Browser Use feature Pilothouse does not have (yet)."""

    code = "not_supported"
    status = 501

    def __init__(self, feature: str) -> None:
        super().__init__(
            f"Pilothouse does not have {feature}; see docs/browser-use-compat.md for what its v4 API supports."
        )


# v4 paths (after /api/v4/) of what Pilothouse lacks, each with the feature its answer names.
MISSING: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^profiles(/.*)?$"), "browser profiles (/profiles)"),
    (re.compile(r"^workspaces(/.*)?$"), "file workspaces or file uploads (/workspaces)"),
    (re.compile(r"^browsers(/.*)?$"), "cloud browsers over CDP (/browsers)"),
    (re.compile(r"^extensions(/.*)?$"), "browser extensions (/extensions)"),
    (re.compile(r"^integrations(/.*)?$"), "integrations (/integrations)"),
    (re.compile(r"^sessions/[^/]+/share$"), "share links (/sessions/{id}/share)"),
    (re.compile(r"^sessions/[^/]+/queue(/.*)?$"), "queued session messages (/sessions/{id}/queue)"),
    (re.compile(r"^sessions/[^/]+/purge$"), "zero-data-retention purges (/sessions/{id}/purge)"),
    (re.compile(r"^runs/[^/]+/attachments$"), "run attachments (/runs/{id}/attachments)"),
]
PATTERN = r"^api/v4/(?P<rest>(profiles|workspaces|browsers|extensions|integrations)(/.*)?|sessions/[^/]+/(share|queue(/.*)?|purge)|runs/[^/]+/attachments)$"  # fmt: skip


@csrf_exempt
def missing_feature(request: HttpRequest, rest: str) -> JsonResponse:
    feature = next(name for pattern, name in MISSING if pattern.match(rest))
    return JsonResponse({"detail": NotInPilothouse(feature).message}, status=NotInPilothouse.status)


@csrf_exempt
def not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return JsonResponse(
        {"detail": f"{request.method} {request.path[:200]} is not a path of Pilothouse's v4 API."}, status=404
    )
