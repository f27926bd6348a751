"""The bundled demo site served on a port of its own (DEMO_PORT), so an agent allowed to reach it reaches nothing else.

`make run` starts `daphne demo_site.server:application`; tests serve `wsgi_application` in a thread. Both answer from
`demo_site.server_urls` alone, whatever ROOT_URLCONF says, so the app's admin and API are not on this origin.
"""

import django
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponseBase

URLCONF = "demo_site.server_urls"


class DemoOnlyASGIHandler(ASGIHandler):
    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        request.urlconf = URLCONF  # Django resolves and reverses against the request's urlconf when it has one
        return await super().get_response_async(request)


class DemoOnlyWSGIHandler(WSGIHandler):
    def get_response(self, request: HttpRequest) -> HttpResponseBase:
        request.urlconf = URLCONF
        return super().get_response(request)


def asgi_application() -> DemoOnlyASGIHandler:
    django.setup(set_prefix=False)
    return DemoOnlyASGIHandler()


def wsgi_application() -> DemoOnlyWSGIHandler:
    django.setup(set_prefix=False)
    return DemoOnlyWSGIHandler()


def __getattr__(name: str) -> DemoOnlyASGIHandler:
    # `daphne demo_site.server:application` imports this module before Django is set up: build the app on access
    if name == "application":
        return asgi_application()
    raise AttributeError(name)
