"""The proxies API: add, list and delete a workspace's proxies, the URL's validation, workspace scoping, credentials
sealed at rest and never shown back, and `proxy_id` at launch (a session property)."""

import json

import pytest

from agent_platform import checks
from runs.models import Proxy, Run
from runs.proxies import open_proxy
from runs.secret_box import SEALED
from tests.support.canaries import database_dump

PASSWORD = "api-canary-pa55word"
URL = f"http://alice:{PASSWORD}@127.0.0.1:3128"


@pytest.fixture(autouse=True)
def loopback_proxies_allowed(settings):
    # the installation's operator allows proxies on this machine (PROXY_ALLOWED_PRIVATE_HOSTS)
    settings.PROXY_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]


def error_of(response, status: int, type: str) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["type"] == type
    return error


def add(api, name: str = "Frankfurt exit", url: str = URL):
    return api.post("/proxies", {"name": name, "url": url})


def test_a_proxy_is_added_and_listed_without_its_credentials(api):
    response = add(api)

    assert response.status_code == 201, response.content
    created = response.json()
    assert created["id"].startswith("proxy_")
    assert {k: created[k] for k in ("name", "scheme", "host", "port", "has_credentials")} == {
        "name": "Frankfurt exit",
        "scheme": "http",
        "host": "127.0.0.1",
        "port": 3128,
        "has_credentials": True,
    }
    listed = api.get("/proxies")
    assert [proxy["id"] for proxy in listed.json()["proxies"]] == [created["id"]]
    for body in (response.content, listed.content):
        assert PASSWORD.encode() not in body and b"alice" not in body


@pytest.mark.django_db(transaction=True)  # committed, so the dump (another connection) reads the row
def test_the_url_is_sealed_at_rest_and_only_the_worker_opens_it(api):
    proxy = Proxy.objects.get(public_id=add(api).json()["id"])

    assert set(proxy.sealed_url) == {SEALED}
    assert PASSWORD not in json.dumps(proxy.sealed_url)
    dump = database_dump()
    assert proxy.public_id in dump and proxy.sealed_url[SEALED] in dump
    assert PASSWORD not in dump and "alice" not in dump
    opened = open_proxy(proxy)
    assert (opened.username, opened.password, opened.port) == ("alice", PASSWORD, 3128)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://proxy.example.com:21", "must start with http://, https:// or socks5:// (not ftp://)"),
        ("proxy.example.com:3128", "must start with http://, https:// or socks5://"),
        ("socks4://h.example.com:1080", "(not socks4://)"),
        ("http://:3128", "names no host"),
        ("http://proxy.example.com", "must name the proxy's port"),
        ("http://proxy.example.com:0", "must name the proxy's port"),
        ("http://proxy.example.com:99999", "port that is not a number from 1 to 65535"),
        ("http://proxy.example.com:3128/path", "without a path, query or fragment"),
        ("http://proxy.example.com:3128/?a=1", "without a path, query or fragment"),
        ("http://proxy.example.com:3128#top", "without a path, query or fragment"),
        ("http://proxy example.com:3128", "must not contain spaces or control characters"),
        ("http://:pw@proxy.example.com:3128", "has a password without a user name"),
        ("http://" + "a" * 300 + ":pw@proxy.example.com:3128", "user name longer than 255 bytes"),
        ("http://proxy.example.com:3128" + "/" * 2000, "is longer than 2000 characters"),
        ("", "is required"),
        ("http://10.0.0.7:3128", "is refused: 10.0.0.7 is a private address"),
        ("http://169.254.169.254:80", "a cloud metadata address"),
    ],
)
def test_a_bad_url_is_refused_with_a_clear_message(api, url, message):
    error = error_of(add(api, url=url), 400, "invalid_request")
    assert error["message"].startswith("url: ")
    assert message in error["message"]
    assert Proxy.objects.count() == 0


def test_a_refusal_never_repeats_the_password(api):
    for url in (f"ftp://u:{PASSWORD}@h.example.com:1", f"http://u:{PASSWORD}@h.example.com:1/path"):
        response = add(api, url=url)
        assert response.status_code == 400
        assert PASSWORD.encode() not in response.content


def test_name_is_required_and_bounded(api):
    assert "name: is required" in error_of(add(api, name="  "), 400, "invalid_request")["message"]
    assert "limit is 100" in error_of(add(api, name="n" * 101), 400, "invalid_request")["message"]


def test_unknown_fields_are_refused(api):
    error_of(api.post("/proxies", {"name": "x", "url": URL, "password": "x"}), 400, "invalid_request")


def test_socks5_and_https_proxies_are_accepted(api):
    socks = add(api, name="socks", url="socks5://u:p%40ss@127.0.0.1:1080").json()
    tls = add(api, name="tls", url="https://127.0.0.1:8443").json()
    assert (socks["scheme"], socks["has_credentials"]) == ("socks5", True)
    assert (tls["scheme"], tls["has_credentials"]) == ("https", False)
    assert open_proxy(Proxy.objects.get(public_id=socks["id"])).password == "p@ss"


def test_another_workspace_cannot_see_or_delete_a_proxy(api, umbrella_api):
    proxy_id = add(api).json()["id"]

    assert umbrella_api.get("/proxies").json() == {"proxies": []}
    error_of(umbrella_api._call("delete", f"/proxies/{proxy_id}"), 404, "not_found")
    assert api.get("/proxies").json()["proxies"][0]["id"] == proxy_id


def test_without_a_key_the_api_refuses(client):
    assert client.get("/api/v1/proxies").status_code == 401
    assert client.post("/api/v1/proxies", {"name": "x", "url": URL}, content_type="application/json").status_code == 401


def test_a_deleted_proxy_is_forgotten_but_its_sessions_do_not_go_out_directly(api):
    proxy_id = add(api).json()["id"]
    run = api.post("/runs", {"task": "t", "proxy_id": proxy_id}).json()

    assert api._call("delete", f"/proxies/{proxy_id}").status_code == 204

    assert api.get("/proxies").json() == {"proxies": []}
    error_of(api._call("delete", f"/proxies/{proxy_id}"), 404, "not_found")
    proxy = Proxy.objects.get(public_id=proxy_id)
    assert proxy.sealed_url == {} and proxy.deleted_at is not None
    # the session still names it, so its runs fail rather than go out without it
    assert Run.objects.get(public_id=run["id"]).session.proxy == proxy
    error = error_of(api.post("/runs", {"task": "t", "proxy_id": proxy_id}), 400, "invalid_request")
    assert error["message"].startswith("proxy_id: no proxy")


def test_a_run_is_launched_with_proxy_id_and_its_follow_up_keeps_it(api):
    proxy_id = add(api).json()["id"]

    first = api.post("/runs", {"task": "t", "proxy_id": proxy_id})
    assert first.status_code == 201, first.content
    assert first.json()["proxy_id"] == proxy_id
    session_id = first.json()["session_id"]
    follow_up = api.post("/runs", {"task": "next", "session_id": session_id})
    assert follow_up.json()["proxy_id"] == proxy_id
    same = api.post("/runs", {"task": "again", "session_id": session_id, "proxy_id": proxy_id})
    assert same.status_code == 201
    assert api.get(f"/runs/{first.json()['id']}").json()["proxy_id"] == proxy_id
    assert api.post("/runs", {"task": "t"}).json()["proxy_id"] is None


def test_a_follow_up_naming_another_proxy_is_conflict(api):
    first_proxy = add(api, name="one").json()["id"]
    other_proxy = add(api, name="two", url="socks5://127.0.0.1:1080").json()["id"]
    with_proxy = api.post("/runs", {"task": "t", "proxy_id": first_proxy}).json()["session_id"]
    without = api.post("/runs", {"task": "t"}).json()["session_id"]

    for session_id in (with_proxy, without):
        error = error_of(
            api.post("/runs", {"task": "t", "session_id": session_id, "proxy_id": other_proxy}), 409, "conflict"
        )
        assert error["message"].startswith("proxy_id: session")


def test_an_unknown_or_foreign_proxy_id_is_invalid_request_naming_proxy_id(api, umbrella_api):
    foreign = add(umbrella_api).json()["id"]

    for proxy_id in (foreign, "proxy_doesnotexist", "not an id"):
        error = error_of(api.post("/runs", {"task": "t", "proxy_id": proxy_id}), 400, "invalid_request")
        assert error["message"].startswith("proxy_id: no proxy")
    # the same words for a foreign id as for a made-up one: nothing tells that it exists elsewhere
    assert Run.objects.count() == 0


def test_an_allowance_for_proxies_that_does_not_parse_is_a_settings_error(settings):
    settings.PROXY_ALLOWED_PRIVATE_HOSTS = ["10.0.4.0/24:3128", "10.0.0.0/99"]
    assert [message.id for message in checks.check_proxy_allowed_private_hosts()] == ["pilothouse.E020"]
    settings.PROXY_ALLOWED_PRIVATE_HOSTS = ["10.0.4.0/24:3128", "proxy.internal"]
    assert checks.check_proxy_allowed_private_hosts() == []


def test_a_proxy_on_an_allowed_private_range_is_accepted_and_others_are_not(api, settings):
    settings.PROXY_ALLOWED_PRIVATE_HOSTS = ["10.0.4.0/24:3128"]
    assert add(api, url="http://10.0.4.9:3128").status_code == 201
    assert (
        "10.0.4.9 is allowed on other ports only"
        in error_of(add(api, url="http://10.0.4.9:8080"), 400, "invalid_request")["message"]
    )
    assert (
        "127.0.0.1 is a loopback address"
        in error_of(add(api, url="http://127.0.0.1:3128"), 400, "invalid_request")["message"]
    )
