"""The Profiles page and the launch form's profile select: what they show (escaped), create, delete and sign in by
hand from the page, and another workspace's profile is not found."""

from django.urls import reverse

from runs.models import Run
from runs.profiles.models import Profile
from tests.support.factories import make_run, make_session

HOSTILE_NAME = '<script>alert("p")</script>'


def make_profile(workspace, name: str = "Supplier portal", **fields) -> Profile:
    return Profile.objects.create(workspace=workspace, name=name, **fields)


def test_the_page_lists_profiles_with_domains_size_and_runs_escaped(alice_client, acme, umbrella):
    profile = make_profile(
        acme,
        HOSTILE_NAME,
        **Profile.sealed_fields({"cookies": [{"name": "a", "value": "secret-cookie-1", "domain": ".portal.test"}]}),
    )
    run = make_run(acme, session=make_session(acme), profile=profile)
    make_profile(umbrella, "Umbrella's own")

    page = alice_client.get(reverse("runs:profiles"))

    assert page.status_code == 200
    html = page.content.decode()
    assert HOSTILE_NAME not in html and "&lt;script&gt;alert(&quot;p&quot;)&lt;/script&gt;" in html
    assert "portal.test" in html and run.public_id in html
    assert "secret-cookie-1" not in html
    assert "Umbrella&#x27;s own" not in html and "Umbrella's own" not in html
    assert 'href="/profiles/"' in alice_client.get("/").content.decode()  # the nav links it


def test_create_from_the_page_and_a_bad_name_is_refused(alice_client, acme):
    created = alice_client.post(reverse("runs:profile_create"), {"name": "Portal"})
    assert created.status_code == 302
    assert Profile.objects.get(workspace=acme).name == "Portal"

    refused = alice_client.post(reverse("runs:profile_create"), {"name": "   "})
    assert refused.status_code == 400
    assert "name: is required" in refused.content.decode()
    assert Profile.objects.count() == 1


def test_delete_asks_first_and_deletes(alice_client, acme):
    profile = make_profile(acme)
    html = alice_client.get(reverse("runs:profiles")).content.decode()
    assert "data-confirm=" in html
    assert alice_client.post(reverse("runs:profile_delete", args=[profile.public_id])).status_code == 302
    assert not Profile.objects.exists()


def test_another_workspaces_profile_is_not_found(charlie_client, acme):
    profile = make_profile(acme)
    assert charlie_client.post(reverse("runs:profile_delete", args=[profile.public_id])).status_code == 404
    signing_in = charlie_client.post(
        reverse("runs:profile_sign_in", args=[profile.public_id]), {"start_url": "https://portal.test/"}
    )
    assert signing_in.status_code == 404
    assert Profile.objects.filter(pk=profile.pk).exists()
    assert not Run.objects.exists()


def test_sign_in_by_hand_from_the_page_opens_its_run_page_with_save(alice_client, acme):
    profile = make_profile(acme)
    started = alice_client.post(
        reverse("runs:profile_sign_in", args=[profile.public_id]), {"start_url": "https://portal.test/login"}
    )
    run = Run.objects.get(profile=profile)
    assert started.status_code == 302 and started["Location"] == reverse("runs:detail", args=[run.public_id])
    assert run.kind == Run.Kind.SIGN_IN and run.model == ""

    html = alice_client.get(started["Location"]).content.decode()
    assert 'id="sign-in-save-form"' in html and "Save profile" in html
    assert alice_client.get(reverse("runs:list")).status_code == 200  # a run with no model and no requests

    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)  # its worker opened the browser
    saved = alice_client.post(reverse("runs:sign_in_save", args=[run.public_id]))
    assert saved.status_code == 302
    run.refresh_from_db()
    assert run.save_requested_at is not None


def test_a_bad_start_url_is_refused_on_the_page(alice_client, acme):
    profile = make_profile(acme)
    refused = alice_client.post(reverse("runs:profile_sign_in", args=[profile.public_id]), {"start_url": "ftp://x"})
    assert refused.status_code == 400
    assert "start_url" in refused.content.decode()
    assert not Run.objects.exists()


def test_the_launch_form_offers_the_workspaces_profiles(alice_client, acme, umbrella):
    profile = make_profile(acme, "Portal")
    make_profile(umbrella, "Not ours")
    html = alice_client.get(reverse("runs:new")).content.decode()
    assert f'value="{profile.public_id}"' in html and "Not ours" not in html
    assert 'id="id_save_profile"' in html

    launched = alice_client.post(
        reverse("runs:new"), {"task": "Check the order.", "profile_id": profile.public_id, "max_turns": "5"}
    )
    assert launched.status_code == 302, launched.content.decode()[:2000]
    run = Run.objects.get(profile=profile)
    assert run.save_profile is False  # the box was not ticked in this post

    session = run.session
    follow_up = alice_client.get(reverse("runs:new") + f"?session={session.public_id}").content.decode()
    assert 'id="id_profile_id"' not in follow_up  # a follow-up continues its session's browser


def test_the_admin_shows_a_profile_without_its_state(acme, db):
    from django.contrib.auth import get_user_model
    from django.test import Client

    staff = get_user_model().objects.create_user(username="root", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    profile = make_profile(
        acme, **Profile.sealed_fields({"cookies": [{"name": "a", "value": "admin-cookie-7", "domain": "x.test"}]})
    )
    html = client.get(reverse("admin:runs_profile_change", args=[profile.pk])).content.decode()
    assert profile.public_id in html and "x.test" in html
    assert "admin-cookie-7" not in html and profile.sealed_state not in html
