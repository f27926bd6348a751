"""Share links: made from the session page and /api/v1 (v4: tests/v4/test_sdk_rest.py); opened signed out, read-only
(task, timeline, screenshots, verdict, data, judgment; secrets masked; no live view, messages, trace or re-judging);
nothing of another session reachable through them; turned off 410, expired 410, unknown 404; views counted."""

from datetime import timedelta

import pytest
from django.core.files.base import ContentFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judge.models import Judgment
from runs.events import emit
from runs.models import Run, SessionShare
from runs.screenshots import save_screenshot
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
def finished_run(acme):
    run = make_run(
        acme,
        status=Run.Status.SUCCEEDED,
        success=True,
        task="Sign in as {{secret:SHOP_PASSWORD}} and list the orders.",
        output="Two orders.",
        data={"orders": [{"id": "A-1"}, {"id": "A-2"}]},
    )
    shot = save_screenshot(run.public_id, PNG)
    emit(
        run, "agent.tool_use", {"turn": 1, "id": "tu_1", "name": "type", "input": {"text": "{{secret:SHOP_PASSWORD}}"}}
    )
    emit(run, "agent.tool_result", {"tool_use_id": "tu_1", "name": "type", "content": [], "screenshot_url": shot})
    Judgment.objects.create(run=run, verdict="pass", reason="Both orders are on the page.")
    return run


def shared(api, run) -> dict:
    answer = api.post(f"/sessions/{run.session.public_id}/share", {})
    assert answer.status_code == 200, answer.content
    return answer.json()


def test_a_link_opens_signed_out_read_only_with_task_timeline_screenshots_verdict_data_and_judgment(api, finished_run):
    link = shared(api, finished_run)
    page = Client().get(link["url"].split("testserver")[-1])
    assert page.status_code == 200
    text = page.content.decode()
    for shown in ("list the orders", "Two orders.", "A-2", "Both orders are on the page.", "{{secret:SHOP_PASSWORD}}"):
        assert shown in text, shown
    token = link["token"]
    assert f"/share/{token}/runs/{finished_run.public_id}/screenshots/" in text
    assert f"/runs/{finished_run.public_id}/screenshots/" not in text.replace(f"/share/{token}/runs/", "")
    # No live view, no person card or messages, no trace, no re-judging, no cancel.
    for absent in ("/ws/runs/", "live.js", "person.js", "trace.zip", "rejudge", "cancel-form", "follow-up"):
        assert absent not in text, absent
    shot = text.split(f"/share/{token}/runs/{finished_run.public_id}/screenshots/")[1].split('"')[0]
    image = Client().get(f"/share/{token}/runs/{finished_run.public_id}/screenshots/{shot}")
    assert image.status_code == 200 and b"".join(image.streaming_content) == PNG


def test_the_operators_pages_stay_closed_to_a_link_holder(api, finished_run):
    shared(api, finished_run)
    anonymous = Client()
    for url in (
        reverse("runs:detail", args=[finished_run.public_id]),
        reverse("runs:trace", args=[finished_run.public_id]),
        reverse("runs:message", args=[finished_run.public_id]),
        reverse("runs:session", args=[finished_run.session.public_id]),
    ):
        assert anonymous.get(url).status_code == 302, url  # to sign-in


def test_nothing_of_another_run_is_reachable_through_a_link(api, acme, finished_run):
    token = shared(api, finished_run)["token"]
    other = make_run(acme, status=Run.Status.SUCCEEDED)
    name = save_screenshot(other.public_id, PNG).rsplit("/", 1)[-1]
    assert Client().get(f"/share/{token}/runs/{other.public_id}/screenshots/{name}").status_code == 404
    assert Client().get(f"/share/{token}/runs/{finished_run.public_id}/screenshots/../../x").status_code == 404


def test_a_link_turned_off_is_410_on_again_200_expired_410_and_unknown_404(api, finished_run):
    link = shared(api, finished_run)
    path = f"/share/{link['token']}/"
    assert Client().get(path).status_code == 200
    off = api.delete(f"/sessions/{finished_run.session.public_id}/share")
    assert off.status_code == 200 and off.json()["active"] is False
    gone = Client().get(path)
    assert gone.status_code == 410 and "no longer works" in gone.content.decode()
    assert Client().get(f"/share/{link['token']}/runs/{finished_run.public_id}/screenshots/x.png").status_code == 404
    assert shared(api, finished_run)["token"] == link["token"]
    assert Client().get(path).status_code == 200
    SessionShare.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert Client().get(path).status_code == 410
    assert Client().get("/share/not-a-token-anyone-was-given/").status_code == 404


def test_a_link_may_expire_and_counts_its_views(api, finished_run):
    answer = api.post(f"/sessions/{finished_run.session.public_id}/share", {"expires_in_seconds": 3600})
    expires = answer.json()["expires_at"]
    assert expires is not None and answer.json()["view_count"] == 0
    for _ in range(3):
        Client().get(f"/share/{answer.json()['token']}/")
    again = api.get(f"/sessions/{finished_run.session.public_id}/share").json()
    assert again["view_count"] == 3 and again["expires_at"] == expires
    refused = api.post(f"/sessions/{finished_run.session.public_id}/share", {"expires_in_seconds": 5})
    assert refused.status_code == 400 and refused.json()["error"]["message"].startswith("expires_in_seconds")


def test_an_operator_shares_and_turns_off_from_the_session_page(alice_client, finished_run):
    session = finished_run.session
    page = alice_client.get(reverse("runs:session", args=[session.public_id]))
    assert 'id="share-form"' in page.content.decode()
    alice_client.post(reverse("runs:session_share", args=[session.public_id]), {"expires": "7d"})
    share = SessionShare.objects.get(session=session)
    assert share.active and share.expires_at > timezone.now() + timedelta(days=6)
    page = alice_client.get(reverse("runs:session", args=[session.public_id])).content.decode()
    assert f"/share/{share.token}/" in page
    alice_client.post(reverse("runs:session_unshare", args=[session.public_id]))
    share.refresh_from_db()
    assert not share.active


def test_charlie_cannot_share_another_workspaces_session(charlie_client, umbrella_api, finished_run):
    session = finished_run.session
    assert charlie_client.post(reverse("runs:session_share", args=[session.public_id])).status_code == 404
    assert umbrella_api.post(f"/sessions/{session.public_id}/share", {}).status_code == 404
    assert umbrella_api.delete(f"/sessions/{session.public_id}/share").status_code == 404
    assert not SessionShare.objects.exists()


def test_a_share_link_is_long_and_random(api, acme):
    tokens = {shared(api, make_run(acme, status=Run.Status.SUCCEEDED))["token"] for _ in range(5)}
    assert len(tokens) == 5 and all(len(token) >= 43 for token in tokens)


def test_a_download_of_a_shared_run_is_not_served_through_the_link(api, acme, finished_run):
    from runs.files import store_file

    row = store_file(acme, ContentFile(b"secret invoice"), name="invoice.pdf", source="download", run=finished_run)
    token = shared(api, finished_run)["token"]
    assert Client().get(f"/share/{token}/runs/{finished_run.public_id}/files/{row.public_id}").status_code == 404
