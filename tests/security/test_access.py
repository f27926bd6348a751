"""Access: every operator page and socket needs a login, every form a CSRF token, sockets a same-site Origin; the API
takes keys, not cookies; the admin is for staff only."""

import re

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib import admin
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from agent_platform.asgi import application
from runs.consumers import CLOSE_UNAUTHENTICATED
from runs.routing import websocket_urlpatterns
from tests.support.factories import make_run

# Public by design: signing in, the API (bearer keys, tested apart), the admin (its own login, tested below), the
# Prometheus endpoint (its own bearer token: tests/observability), the bundled demo site, which the agent's browser
# visits without a login, and share links (the token is the permission: tests/sharing).
PUBLIC_PREFIXES = ("login/", "logout/", "api/", "admin/", "metrics", "demo/", "share/")
PLACEHOLDER = re.compile(r"<(?:(\w+):)?(\w+)>")


def placeholder(match: re.Match[str]) -> str:
    """A value the route's converter accepts: a number for <int:...>, a name otherwise."""
    return "1" if match.group(1) == "int" else f"x_{match.group(2)}"


def operator_routes() -> list[str]:
    """Every operator page route, as a concrete path with placeholder parameters."""
    found = []

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if route.removeprefix("^").startswith(PUBLIC_PREFIXES):  # a re_path's pattern opens with its anchor
                continue
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                found.append("/" + PLACEHOLDER.sub(placeholder, route))

    walk(get_resolver().url_patterns, "")
    return found


def test_the_walk_finds_every_operator_page(db):
    routes = operator_routes()
    for expected in ("/", "/runs/new/", "/runs/x_run_id/cancel/", "/settings/keys/", "/usage/", "/sessions/"):
        assert expected in routes
    assert len(routes) >= 15


@pytest.mark.parametrize("method", ["get", "post"])
def test_every_operator_page_sends_an_anonymous_visitor_to_the_login(client, db, method):
    for route in operator_routes():
        response = getattr(client, method)(route)
        assert response.status_code == 302, (method, route, response.status_code)
        assert response["Location"].startswith(reverse("login")), (method, route)


def test_every_form_refuses_a_post_without_its_csrf_token(alice, acme):
    run = make_run(acme, status="succeeded")
    session = run.session
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    posts = {
        "launch": "/runs/new/",
        "follow-up": f"/runs/new/?session={session.public_id}",
        "cancel": f"/runs/{run.public_id}/cancel/",
        "rejudge": f"/runs/{run.public_id}/rejudge/",
        "key create": reverse("platform:key_create"),
        "key revoke": reverse("platform:key_revoke", args=["abcdef"]),
        "choose workspace": reverse("platform:choose_workspace", args=["acme"]),
        "schema lint": reverse("runs:schema_lint"),
        "logout": reverse("logout"),
    }
    # …and every other route a POST can reach, so a form added later is covered too.
    posts.update({route: route for route in operator_routes()})
    for name, path in posts.items():
        response = browser.post(path.replace("x_run_id", run.public_id).replace("x_session_id", session.public_id),
                                {"task": "Forged task", "name": "forged"})  # fmt: skip
        assert response.status_code == 403, (name, path, response.status_code)
    from agent_platform.models import ApiKey
    from runs.models import Run

    assert Run.objects.count() == 1 and not ApiKey.objects.exists(), "nothing was created by a forged post"


def test_the_same_form_with_its_token_goes_through(alice, acme):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(alice)
    browser.get("/runs/new/")
    token = browser.cookies["csrftoken"].value
    response = browser.post("/runs/new/", {"task": "A real task", "csrfmiddlewaretoken": token})
    assert response.status_code == 302


def test_the_api_does_not_accept_a_signed_in_browser_session(alice_client, acme):
    response = alice_client.get("/api/v1/workspace")
    assert response.status_code == 401
    response = alice_client.post("/api/v1/runs", data={"task": "x"}, content_type="application/json")
    assert response.status_code == 401


def test_the_admin_is_for_staff_only(alice, alice_client, db):
    changelists = [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist") for model in admin.site._registry
    ]
    assert len(changelists) >= 5
    for path in ["/admin/", *changelists]:
        anonymous = Client().get(path)
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/admin/login/"), path
        member = alice_client.get(path)  # a workspace owner who is not staff
        assert member.status_code == 302 and member["Location"].startswith("/admin/login/"), path
    alice.is_staff = alice.is_superuser = True
    alice.save()
    staff = Client()
    staff.force_login(alice)
    for path in changelists:
        assert staff.get(path).status_code == 200, path


# --- sockets --------------------------------------------------------------------------------------------------------

SAME_SITE = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def socket_paths(run_id: str) -> list[str]:
    return ["/" + PLACEHOLDER.sub(run_id, str(pattern.pattern)) for pattern in websocket_urlpatterns]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_every_socket_closes_on_an_anonymous_visitor(acme):
    from channels.db import database_sync_to_async

    run = await database_sync_to_async(make_run)(acme)
    paths = socket_paths(run.public_id)
    assert len(paths) == 3  # the runs list, a run's events and its live browser view
    for path in paths:
        socket = WebsocketCommunicator(application, path, headers=SAME_SITE)
        connected, _ = await socket.connect()
        assert connected  # accepted only to carry the close code
        assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": CLOSE_UNAUTHENTICATED}
        await socket.wait()  # the consumer's task ends here, not in the event loop's teardown


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_every_socket_refuses_a_foreign_origin_even_with_a_session(alice, acme):
    from channels.db import database_sync_to_async

    run = await database_sync_to_async(make_run)(acme)
    client = Client()
    await database_sync_to_async(client.force_login)(alice)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    for path in socket_paths(run.public_id):
        socket = WebsocketCommunicator(
            application,
            path,
            headers=[(b"cookie", cookie), (b"origin", b"http://evil.example"), (b"host", b"127.0.0.1")],
        )
        connected, _ = await socket.connect()
        assert not connected, path
        await socket.wait()


@pytest.fixture
def anyio_backend():
    return "asyncio"
