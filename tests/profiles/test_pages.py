"""The Profiles page and the launch form's profile select: what they show (escaped), create, delete and sign in by
hand from the page, and another workspace's profile is not found."""

from django.urls import reverse

from runs.events import emit
from runs.models import Run
from runs.profiles.models import Profile, state_summary, what_save_stores
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


def test_the_sign_in_by_hand_page_shows_no_agent_cards(alice_client, acme):
    profile = make_profile(acme)
    started = alice_client.post(
        reverse("runs:profile_sign_in", args=[profile.public_id]), {"start_url": "https://portal.test/login"}
    )
    html = alice_client.get(started["Location"]).content.decode()
    assert 'id="sign-in-save-form"' in html and 'id="person"' in html
    for agent_card in ['id="verdict"', 'id="judgments"', 'id="judge-pill"', "Turn budget", 'id="follow-up"']:
        assert agent_card not in html, agent_card


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


def test_what_save_stores_counts_cookies_per_domain_and_guesses_the_sign_in_from_an_http_only_cookie():
    state = {
        "cookies": [
            {"name": "session", "value": "v1", "domain": "shop.localhost", "httpOnly": True},
            {"name": "cart", "value": "v2", "domain": "shop.localhost", "httpOnly": False},
            {"name": "prefs", "value": "v3", "domain": ".shop.localhost", "httpOnly": False},
            {"name": "ad", "value": "v4", "domain": ".ads.test", "httpOnly": True},
        ],
        "origins": [
            {"origin": "http://shop.localhost", "localStorage": [{"name": "who", "value": "ada"}]},
            {"origin": "http://other.test", "localStorage": [], "indexedDB": [{"name": "db"}]},
        ],
    }
    summary = state_summary(state, "http://shop.localhost/account?token=abc")
    assert summary["looks_signed_in"] and summary["host"] == "shop.localhost"
    assert what_save_stores(summary) == (
        "Save will store cookies for ads.test (1 cookie), shop.localhost (3 cookies), local storage for 1 origin, "
        "IndexedDB for 1 origin"
    )
    assert "v1" not in str(summary) and "session" not in str(summary)  # no value, no cookie's name
    assert not state_summary(state, "http://elsewhere.test/")["looks_signed_in"]  # the HttpOnly one is another site's
    assert not state_summary({"cookies": [state["cookies"][1]]}, "http://shop.localhost/")["looks_signed_in"]
    assert what_save_stores(state_summary(None)).startswith("Save will store an empty profile")


def test_the_sign_in_page_shows_what_save_would_store_as_the_worker_last_read_it(alice_client, acme):
    profile = make_profile(acme)
    run = make_run(acme, session=make_session(acme), profile=profile, kind=Run.Kind.SIGN_IN, model="")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    page = reverse("runs:detail", args=[run.public_id])
    assert "Reading what Save would store" in alice_client.get(page).content.decode()

    emit(
        run,
        "sign_in.state",
        state_summary({"cookies": [{"domain": "portal.test", "httpOnly": True}]}, "http://portal.test/"),
    )
    for html in (
        alice_client.get(page).content.decode(),
        alice_client.get(reverse("runs:panels", args=[run.public_id])).content.decode(),
    ):
        assert "looks signed in" in html
        assert "Save will store cookies for portal.test (1 cookie)." in html


def test_the_timeline_draws_each_sign_in_state_as_a_sentence_not_its_raw_data(alice_client, acme):
    run = make_run(acme, session=make_session(acme), profile=make_profile(acme), kind=Run.Kind.SIGN_IN, model="")
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    emit(run, "sign_in.state", state_summary(None, ""))
    emit(run, "sign_in.state", state_summary({"cookies": [{"domain": "portal.test"}]}, "http://portal.test/"))
    emit(
        run,
        "sign_in.state",
        state_summary(
            {
                "cookies": [{"domain": "portal.test", "httpOnly": True}, {"domain": ".portal.test"}],
                "origins": [{"origin": "http://portal.test", "localStorage": [{"name": "k", "value": "v"}]}],
            },
            "http://portal.test/account",
        ),
    )
    page = alice_client.get(reverse("runs:detail", args=[run.public_id])).content.decode()
    timeline = page[page.index('id="timeline"') :]
    assert "Browser state · no page yet · Save will store an empty profile" in timeline
    assert "Browser state · not signed in to portal.test yet · Save will store cookies for portal.test (1 cookie)" in (
        timeline
    )
    assert (
        "Browser state · looks signed in to portal.test · "
        "Save will store cookies for portal.test (2 cookies), local storage for 1 origin"
    ) in timeline
    assert "ev-other" not in timeline and "local_storage_origins" not in timeline
