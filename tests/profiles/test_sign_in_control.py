"""Sign in by hand, driven by a person: the operator's clicks and typing over the live socket reach the sign-in's page
(no agent, no pause needed), Save keeps what the page stored in the profile, and before Save the run page shows
whether the browser looks signed in and what Save would store, with the signed-in page in the live view."""

import os

import pytest
from playwright.sync_api import expect

from runs.models import Run
from runs.profiles.models import Profile
from tests.support import live
from tests.support import sign_in_site as site_fixtures
from tests.support.launching import events, finished, wait_for
from tests.support.live import on_the_live_picture, send_over_live_socket, signed_in_page

asgi_server = live.asgi_server
chromium = live.chromium
sign_in_site = site_fixtures.sign_in_site

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("celery_worker", "transactional_db")]

# Where tests/pages/control.html puts its field and its button (CSS pixels of the viewport).
NAME_FIELD = {"x": 250, "y": 120}
GO_BUTTON = {"x": 200, "y": 225}


def test_a_sign_in_by_hand_takes_a_members_input_and_saves_what_the_page_kept(
    api, asgi_server, site, alice, charlie, messages_stub
):
    profile_id = api.post("/profiles", {"name": "Driven by hand"}).json()["id"]
    started = api.post(f"/profiles/{profile_id}/sign_in", {"start_url": f"{site}/control.html"})
    assert started.status_code == 201, started.content
    run = Run.objects.get(public_id=started.json()["id"])
    wait_for(lambda: events(run, "sign_in.opened"), timeout=60, message="the sign-in browser to open")

    refused = send_over_live_socket(asgi_server, charlie, run.public_id, [{"kind": "text", "text": "intruder"}])
    assert {"type": "closed", "code": 4404} in refused
    replies = send_over_live_socket(
        asgi_server,
        alice,
        run.public_id,
        [
            {"kind": "mouse", "action": "click", **NAME_FIELD},
            {"kind": "text", "text": "ada-lovelace-1815"},
            {"kind": "key", "key": "Enter"},
            {"kind": "mouse", "action": "click", **GO_BUTTON},
        ],
    )
    assert not [reply for reply in replies if reply["type"] == "input_refused"], replies

    assert api.post(f"/runs/{run.public_id}/save").status_code == 200
    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert messages_stub.requests == [], "a sign-in by hand sends no model request"
    state = Profile.objects.get(public_id=profile_id).state() or {}
    stored = {item["name"]: item["value"] for origin in state["origins"] for item in origin["localStorage"]}
    assert stored["seen"] == "entered ada-lovelace-1815 | clicked go"
    # What the person typed is in the page's own storage (now the profile's), never in the run's record.
    assert "ada-lovelace-1815" not in str([event.payload for event in events(run)])


def centre_colour(page) -> tuple[int, int, int]:
    """The colour at the middle of the live picture as the run page draws it."""
    return tuple(
        page.evaluate(
            """() => {
                const img = document.getElementById("live-img");
                const canvas = document.createElement("canvas");
                canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
                const context = canvas.getContext("2d");
                context.drawImage(img, 0, 0);
                return Array.from(context.getImageData(img.naturalWidth / 2, img.naturalHeight / 2, 1, 1).data)
                    .slice(0, 3);
            }"""
        )
    )


def looks_green(colour: tuple[int, int, int]) -> bool:
    red, green, blue = colour
    expected = site_fixtures.SIGNED_IN_COLOUR
    return abs(red - expected[0]) < 40 and abs(green - expected[1]) < 40 and abs(blue - expected[2]) < 40


def test_a_person_in_chromium_signs_in_by_hand_and_sees_the_signed_in_page_before_saving(
    api, asgi_server, chromium, alice, sign_in_site, messages_stub
):
    profile_id = api.post("/profiles", {"name": "Seen before saving"}).json()["id"]
    started = api.post(f"/profiles/{profile_id}/sign_in", {"start_url": f"{sign_in_site.url}/login"})
    assert started.status_code == 201, started.content
    run = Run.objects.get(public_id=started.json()["id"])
    page = signed_in_page(chromium, asgi_server, alice)
    page.goto(f"{asgi_server}/runs/{run.public_id}/")
    page.wait_for_function("Number(document.getElementById('live-view').dataset.frames || 0) >= 1", timeout=60000)
    expect(page.locator("#sign-in-state")).to_contain_text("not signed in yet", timeout=30000)
    expect(page.locator("#save-stores")).to_have_text(
        "Save will store an empty profile: the browser holds no cookies and no storage yet."
    )

    # Focus the form's first field from the page's body, type the name, then the password, and submit.
    page.locator("#live-img").scroll_into_view_if_needed()
    page.mouse.click(*on_the_live_picture(page, 600, 500))
    page.keyboard.press("Tab")
    page.keyboard.type("erin")
    page.keyboard.press("Tab")
    page.keyboard.type(site_fixtures.PASSWORD)
    page.keyboard.press("Enter")

    expect(page.locator("#sign-in-state")).to_contain_text("looks signed in", timeout=30000)
    expect(page.locator("#save-stores")).to_have_text(
        "Save will store cookies for 127.0.0.1 (1 cookie), local storage for 1 origin."
    )
    wait_for(lambda: looks_green(centre_colour(page)), timeout=30, message="the live view to show the signed-in page")
    # The timeline, drawn live, tells each state read as a sentence, not as its raw data.
    states = page.locator('#timeline [data-type="sign_in.state"]')
    expect(states.last).to_contain_text(
        "Browser state · looks signed in to 127.0.0.1 · "
        "Save will store cookies for 127.0.0.1 (1 cookie), local storage for 1 origin"
    )
    expect(states.first).to_contain_text("Save will store an empty profile")
    expect(page.locator('#timeline .ev-other[data-type="sign_in.state"]')).to_have_count(0)
    assert Profile.objects.get(public_id=profile_id).cookie_domains == [], "nothing is stored before Save"

    page.locator("#sign-in-save-form button").click()
    run = finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert Profile.objects.get(public_id=profile_id).cookie_domains == ["127.0.0.1"]
    assert sign_in_site.tokens_of("erin"), "the site signed erin in"
    shown = str([event.payload for event in events(run, "sign_in.state")])
    assert site_fixtures.PASSWORD not in shown and sign_in_site.tokens_of("erin")[0] not in shown
