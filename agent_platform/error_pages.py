"""The console's error pages (ROOT_URLCONF's handler400, 403, 404 and 500): Django's own, each giving its database
connection back once rendered.

Over ASGI, an exception that leaves a view (Http404, PermissionDenied, a bug) is turned into its page by an async
layer of the middleware chain, on a thread of the event loop's default executor (Django's
convert_exception_to_response: sync_to_async with thread_sensitive=False), not on the request's own thread. That thread
outlives the request and no request_finished reaches it, so a page that read the database there (base.html reads the
person's workspaces) kept that thread's pooled connection for good: a browser's few 404s took every connection of a
web process with DB_POOL_MAX=4, and its next pages waited DB_POOL_TIMEOUT_SECONDS for one (tests/fleet)."""

from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponse
from django.views import defaults

from . import db


def connection_given_back(page: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(page)
    def render(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        # rendered inside: Django's error pages are no TemplateResponse, so no query is left for later
        return db.released_after(page, request, *args, **kwargs)

    return render


bad_request = connection_given_back(defaults.bad_request)
permission_denied = connection_given_back(defaults.permission_denied)
page_not_found = connection_given_back(defaults.page_not_found)
server_error = connection_given_back(defaults.server_error)
