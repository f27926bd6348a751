"""Profiles for real: a run signs in on a test site with a profile, the next run on it lands signed in, a run with
save_profile false changes nothing, a sign-in by hand saves a profile, and the state is sealed in every dump."""

import io
import zipfile

import pytest
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from runs.models import Run
from runs.profiles.models import Profile
from runs.secret_box import unseal
from runs.traces import trace_path
from tests import messages_stub as stub_fixtures
from tests.support import sign_in_site as site_fixtures
from tests.support.canaries import dumped
from tests.support.launching import events, finished, wait_for
from tests.support.replies import browser, done, on_field

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
sign_in_site = site_fixtures.sign_in_site

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("celery_worker", "transactional_db")]


def sign_in_replies() -> list:
    """The agent reads the form, fills in the user and the password (a run secret), and submits it."""
    return [
        browser("read_page", filter="interactive"),
        on_field("textbox", "Username", lambda target: browser("form_input", target=target, value="{{secret:SHOP_USER}}")),
        browser("read_page", filter="interactive"),
        on_field("textbox", "Password", lambda target: browser("form_input", target=target, value="{{secret:SHOP_PASSWORD}}")),
        browser("key", text="Return"),
        browser("get_page_text"),
        done(True, "Signed in."),
    ]  # fmt: skip


def launched(api, body: dict) -> Run:
    answer = api.post("/runs", body)
    assert answer.status_code == 201, answer.content
    return Run.objects.get(public_id=answer.json()["id"])


def account_page_seen(api, run: Run) -> str:
    """The text of the account page as the run's agent read it (its get_page_text result)."""
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    return events(run, "agent.tool_result")[0].payload["content"]


def signed_in_profile(api, site, messages_stub) -> tuple[str, Run]:
    profile_id = api.post("/profiles", {"name": "Test shop"}).json()["id"]
    messages_stub.agent(*sign_in_replies())
    first = finished(
        launched(
            api,
            {
                "task": "Sign in to the shop.",
                "start_url": f"{site.url}/login",
                "profile_id": profile_id,
                "secrets": {"SHOP_USER": "alice", "SHOP_PASSWORD": site_fixtures.PASSWORD},
            },
        )
    )
    assert first.status == Run.Status.SUCCEEDED, first.error_message
    assert site.logins == ["alice"]
    return profile_id, first


def test_a_second_run_on_the_profile_lands_signed_in_without_a_login_step(api, sign_in_site, messages_stub):
    profile_id, first = signed_in_profile(api, sign_in_site, messages_stub)
    profile = api.get(f"/profiles/{profile_id}").json()
    assert profile["cookie_domains"] == ["127.0.0.1"]
    assert profile["size_bytes"] > 0 and profile["last_used_at"] is not None
    saved = events(first, "profile.saved")
    assert [event.payload for event in saved] == [
        {"profile_id": profile_id, "cookie_domains": ["127.0.0.1"], "size_bytes": profile["size_bytes"]}
    ]

    messages_stub.agent(browser("get_page_text"), done(True, "Signed in already."))
    second = finished(
        launched(
            api, {"task": "Who is signed in?", "start_url": f"{sign_in_site.url}/account", "profile_id": profile_id}
        )
    )

    page = account_page_seen(api, second)
    assert "Signed in as alice" in page  # the server's session cookie came with the profile
    assert "local storage: alice" in page  # and the page's local storage
    assert sign_in_site.logins == ["alice"], "no second sign-in"
    assert api.get(f"/runs/{second.public_id}").json()["profile_id"] == profile_id


def test_save_profile_false_leaves_the_profile_as_it_was(api, sign_in_site, messages_stub):
    profile_id, _ = signed_in_profile(api, sign_in_site, messages_stub)
    before = Profile.objects.get(public_id=profile_id)

    # This run signs in as someone else on the same profile, and is told not to keep it.
    sign_in_site.logins.clear()
    replies = sign_in_replies()
    messages_stub.agent(*replies)
    other = finished(
        launched(
            api,
            {
                "task": "Sign in as bobby.",
                "start_url": f"{sign_in_site.url}/login",
                "profile_id": profile_id,
                "save_profile": False,
                "secrets": {"SHOP_USER": "bobby", "SHOP_PASSWORD": site_fixtures.PASSWORD},
            },
        )
    )
    assert other.status == Run.Status.SUCCEEDED, other.error_message
    assert sign_in_site.logins == ["bobby"]
    assert not events(other, "profile.saved")

    after = Profile.objects.get(public_id=profile_id)
    assert after.sealed_state == before.sealed_state
    assert after.updated_at == before.updated_at
    messages_stub.agent(browser("get_page_text"), done(True, "Still alice."))
    third = finished(
        launched(api, {"task": "Who?", "start_url": f"{sign_in_site.url}/account", "profile_id": profile_id})
    )
    assert "Signed in as alice" in account_page_seen(api, third)


def test_the_profile_state_is_unreadable_in_a_database_dump(api, sign_in_site, messages_stub):
    profile_id, first = signed_in_profile(api, sign_in_site, messages_stub)
    (token,) = sign_in_site.tokens_of("alice")
    profile = Profile.objects.get(public_id=profile_id)
    # The worker kept it: the state opens to the cookie the server set…
    cookies = {cookie["name"]: cookie["value"] for cookie in (profile.state() or {})["cookies"]}
    assert cookies[site_fixtures.COOKIE] == token
    session_state = unseal(first.session.browser_state)
    assert session_state is not None and any(c["value"] == token for c in session_state["cookies"])

    # …and nothing stored shows it: not the JSON dump, not the raw tables, not the API, not the events.
    dump = io.StringIO()
    call_command("dumpdata", "runs", "judge", stdout=dump)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM runs_profile")
        profile_rows = repr(cursor.fetchall())
        cursor.execute("SELECT * FROM runs_session")
        session_rows = repr(cursor.fetchall())
    with default_storage.open(trace_path(first.public_id), "rb") as stored, zipfile.ZipFile(stored) as archive:
        trace_text = "".join(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())
    exposed = {
        "trace": trace_text,
        "dumpdata": dump.getvalue(),
        "runs_profile": profile_rows,
        "runs_session": session_rows,
        "API": api.get(f"/profiles/{profile_id}").content.decode() + api.get("/profiles").content.decode(),
        "events": dumped([event.as_dict() for event in events(first)]),
    }
    assert profile_id in exposed["dumpdata"]
    assert "{{cookie:" in trace_text, "the trace shows where the cookie went, masked"
    for where, text in exposed.items():
        assert token not in text, f"the session cookie is readable in {where}"
        # (the trace holds the page's own script, which names the key it stores: only the cookie counts there)
        assert where == "trace" or "signed_in_as" not in text, f"the local storage is readable in {where}"


def test_sign_in_by_hand_saves_the_profile_with_no_model_request(api, alice_client, sign_in_site, messages_stub):
    profile_id = api.post("/profiles", {"name": "By hand"}).json()["id"]
    started = api.post(f"/profiles/{profile_id}/sign_in", {"start_url": f"{sign_in_site.url}/login?as=carol"})
    assert started.status_code == 201, started.content
    assert started.json()["kind"] == "sign_in" and started.json()["profile_id"] == profile_id
    run = Run.objects.get(public_id=started.json()["id"])
    wait_for(lambda: events(run, "sign_in.opened"), timeout=60, message="the sign-in browser to open")
    run.refresh_from_db()
    assert run.accepts_control, "a running sign-in takes the operator's mouse and keyboard"

    # The run page offers Save while it runs; the runs list shows the run.
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "sign-in-save-form" in page and "Sign in by hand" in page
    assert alice_client.get("/").status_code == 200

    saved = api.post(f"/runs/{run.public_id}/save")
    assert saved.status_code == 200, saved.content
    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert not run.accepts_control
    assert "Saved profile By hand" in run.output
    assert messages_stub.requests == [], "a sign-in by hand sends no model request"
    assert api.get(f"/profiles/{profile_id}").json()["cookie_domains"] == ["127.0.0.1"]
    assert alice_client.get("/").status_code == 200
    assert alice_client.get(reverse("platform:usage")).status_code == 200
    assert api.post(f"/runs/{run.public_id}/save").status_code == 409  # it ended

    messages_stub.agent(browser("get_page_text"), done(True, "Carol."))
    after = finished(
        launched(api, {"task": "Who?", "start_url": f"{sign_in_site.url}/account", "profile_id": profile_id})
    )
    assert "Signed in as carol" in account_page_seen(api, after)


def test_a_cancelled_sign_in_leaves_the_profile_empty(api, sign_in_site, messages_stub):
    profile_id = api.post("/profiles", {"name": "Cancelled"}).json()["id"]
    run_id = api.post(f"/profiles/{profile_id}/sign_in", {"start_url": f"{sign_in_site.url}/login?as=dave"}).json()[
        "id"
    ]
    run = Run.objects.get(public_id=run_id)
    wait_for(lambda: events(run, "sign_in.opened"), timeout=60, message="the sign-in browser to open")

    assert api.post(f"/runs/{run_id}/cancel").status_code == 200
    run = finished(run)

    assert run.status == Run.Status.CANCELLED
    profile = api.get(f"/profiles/{profile_id}").json()
    assert profile["cookie_domains"] == [] and profile["size_bytes"] == 0
