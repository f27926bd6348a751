"""The Proxies section of the workspace settings page (owners add and delete, everyone sees the list without secrets)
and the launch form's proxy select."""

import pytest

from runs.models import Proxy, Run
from tests.support.clients import client_for
from tests.support.factories import make_run, make_session

PASSWORD = "page-canary-pa55word"
URL = f"socks5://bob:{PASSWORD}@127.0.0.1:1080"


@pytest.fixture(autouse=True)
def loopback_proxies_allowed(settings):
    settings.PROXY_ALLOWED_PRIVATE_HOSTS = ["127.0.0.1"]


def test_an_owner_adds_a_proxy_and_the_page_never_shows_its_credentials(alice_client):
    response = alice_client.post("/settings/proxies/", {"name": "Residential", "url": URL}, follow=True)

    page = response.content.decode()
    proxy = Proxy.objects.get()
    assert proxy.name == "Residential" and proxy.has_credentials
    assert "socks5://127.0.0.1:1080" in page and proxy.public_id in page and "sealed" in page
    assert PASSWORD not in page and "bob:" not in page


def test_a_bad_url_is_explained_without_repeating_it(alice_client):
    page = alice_client.post(
        "/settings/proxies/", {"name": "x", "url": f"ftp://u:{PASSWORD}@h.example.com:1"}, follow=True
    ).content.decode()

    assert "The proxy was not added: url: must start with http://, https:// or socks5://" in page
    assert PASSWORD not in page
    assert not Proxy.objects.exists()


def test_an_owner_deletes_a_proxy(alice_client):
    alice_client.post("/settings/proxies/", {"name": "Residential", "url": URL})
    proxy = Proxy.objects.get()

    page = alice_client.post(f"/settings/proxies/{proxy.public_id}/delete/", follow=True).content.decode()

    assert "Proxy Residential is deleted." in page
    assert "No proxies" in page
    proxy.refresh_from_db()
    assert proxy.deleted_at is not None and proxy.sealed_url == {}


def test_a_member_sees_the_list_but_cannot_add_or_delete(alice_client, bob):
    alice_client.post("/settings/proxies/", {"name": "Residential", "url": URL})
    proxy = Proxy.objects.get()
    member = client_for(bob)

    assert "Residential" in member.get("/settings/").content.decode()
    assert member.post("/settings/proxies/", {"name": "n", "url": URL}).status_code == 403
    assert member.post(f"/settings/proxies/{proxy.public_id}/delete/").status_code == 403
    assert Proxy.objects.usable().count() == 1


def test_charlie_cannot_delete_acmes_proxy(alice_client, charlie, umbrella):
    umbrella.memberships.filter(user=charlie).update(role="owner")
    alice_client.post("/settings/proxies/", {"name": "Residential", "url": URL})
    proxy = Proxy.objects.get()

    assert client_for(charlie).post(f"/settings/proxies/{proxy.public_id}/delete/").status_code == 404
    assert "Residential" not in client_for(charlie).get("/settings/").content.decode()
    assert Proxy.objects.usable().count() == 1


def test_the_launch_form_offers_the_workspaces_proxies_and_launches_with_one(
    alice_client, django_capture_on_commit_callbacks
):
    alice_client.post("/settings/proxies/", {"name": "Residential", "url": URL})
    proxy = Proxy.objects.get()

    form = alice_client.get("/runs/new/").content.decode()
    assert f'<option value="{proxy.public_id}"' in form and "Residential (socks5://127.0.0.1:1080)" in form
    with django_capture_on_commit_callbacks(execute=False):
        response = alice_client.post("/runs/new/", {"task": "Open the shop.", "proxy_id": proxy.public_id})

    assert response.status_code == 302, response.content.decode()[:2000]
    run = Run.objects.get()
    assert run.session.proxy == proxy
    follow_up = alice_client.get(f"/runs/new/?session={run.session.public_id}").content.decode()
    assert "Residential (socks5://127.0.0.1:1080)" in follow_up and 'name="proxy_id"' not in follow_up


def test_the_run_page_names_the_sessions_proxy_without_credentials(alice_client, acme):
    alice_client.post("/settings/proxies/", {"name": "Residential", "url": URL})
    run = make_run(acme, session=make_session(acme, proxy=Proxy.objects.get()))

    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()

    assert "Residential (socks5://127.0.0.1:1080)" in page
    assert PASSWORD not in page


def test_the_admin_shows_proxies_read_only_without_the_sealed_url(alice_client, admin_client):
    alice_client.post("/settings/proxies/", {"name": "Residential", "url": URL})
    proxy = Proxy.objects.get()

    listing = admin_client.get("/admin/runs/proxy/").content.decode()
    change = admin_client.get(f"/admin/runs/proxy/{proxy.pk}/change/").content.decode()

    assert "Residential" in listing and "socks5://127.0.0.1:1080" in listing
    assert proxy.public_id in change
    for page in (listing, change):
        assert PASSWORD not in page and proxy.sealed_url["sealed"] not in page
    assert admin_client.get("/admin/runs/proxy/add/").status_code == 403
