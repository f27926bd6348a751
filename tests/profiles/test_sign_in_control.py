"""Sign in by hand, driven by a person: the operator's clicks and typing over the live socket reach the sign-in's page
(no agent, no pause needed), and Save keeps what the page stored in the profile."""

import pytest

from runs.models import Run
from runs.profiles.models import Profile
from tests.support import live
from tests.support.launching import events, finished, wait_for
from tests.support.live import send_over_live_socket

asgi_server = live.asgi_server

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
