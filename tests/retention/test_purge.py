"""Purge on demand: a session's runs lose their content (events, screenshots and live-view images, trace, downloads,
checkpoints, questions, messages, task, output, data, the judge's reasons) in the database and in storage, and keep
their status, usage and cost; the usage page, the usage API and the admin's billing add up the same after it. Through
the session page and /api/v1 (v4: tests/v4/test_sdk_rest.py); a session with a run going is refused; charlie too."""

from decimal import Decimal

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse

from agent_platform.models import ModelRequest
from judge.models import Judgment
from runs.events import emit
from runs.files import StoredFile, store_file
from runs.models import Event, Run, RunCheckpoint, RunInput, RunMessage, SessionShare
from runs.purge import purge_session
from runs.screenshots import save_screenshot
from runs.shares import share_session
from runs.traces import trace_path
from tests.support import admin
from tests.support.admin import BILLING
from tests.support.factories import make_run, make_session

pytestmark = pytest.mark.django_db

staff = admin.staff
staff_client = admin.staff_client


def produced_run(workspace, session=None, cost="0.25") -> Run:
    """A finished run with everything a run produces, and the model requests it was billed for."""
    run = make_run(
        workspace,
        session=session,
        status=Run.Status.SUCCEEDED,
        success=True,
        output="The plans.",
        data={"plan": "secret"},
        cost_usd=Decimal(cost),
        usage_requests=2,
        usage_input=300,
        usage_output=40,
    )
    emit(run, "agent.message", {"turn": 1, "text": "Reading the plans."})
    save_screenshot(run.public_id, b"png-bytes")
    save_screenshot(run.public_id, b"jpg-bytes", "jpg")
    default_storage.save(trace_path(run.public_id), ContentFile(b"PK trace"))
    store_file(workspace, ContentFile(b"%PDF plans"), name="plans.pdf", source="download", run=run)
    RunCheckpoint.objects.create(run=run, turn=1, handovers=0, first_message=0, messages="[]")
    RunInput.objects.create(run=run, question="Which plan?", state=RunInput.State.ANSWERED, answer="B")
    RunMessage.objects.create(run=run, text="Only plan B.")
    Judgment.objects.create(run=run, verdict="pass", reason="The plans are listed.")
    for half in ("0.125", str(Decimal(cost) - Decimal("0.125"))):
        ModelRequest.objects.create(
            workspace=workspace, run=run, source="agent", model=run.model, input_tokens=150, output_tokens=20,
            cost_usd=Decimal(half),
        )  # fmt: skip
    return run


def stored_under(run: Run) -> list[str]:
    names = []
    for folder in (f"screenshots/{run.public_id}", f"traces/{run.public_id}"):
        try:
            names += default_storage.listdir(folder)[1]
        except FileNotFoundError:
            pass
    return names


def test_a_purge_removes_content_and_files_and_keeps_status_usage_and_cost(acme, django_capture_on_commit_callbacks):
    session = make_session(acme)
    runs = [produced_run(acme, session), produced_run(acme, session, cost="0.5")]
    download = StoredFile.objects.get(run=runs[0])
    upload = store_file(acme, ContentFile(b"given"), name="given.txt", source="upload")
    share_session(session)
    assert stored_under(runs[0]) and default_storage.exists(download.storage_path)

    with django_capture_on_commit_callbacks(execute=True):
        purged = purge_session(session)

    assert purged == [run.public_id for run in runs]
    for run in runs:
        run.refresh_from_db()
        assert run.purged_at is not None and (run.task, run.output, run.data) == ("", "", None)
        assert run.status == "succeeded" and run.usage_requests == 2 and run.usage_input == 300
        assert stored_under(run) == [], "screenshots, live-view images and the trace are gone from storage"
        for model in (Event, RunCheckpoint, RunInput, RunMessage, StoredFile):
            assert not model.objects.filter(run=run).exists(), model
        assert Judgment.objects.get(run=run).reason == "" and Judgment.objects.get(run=run).verdict == "pass"
        assert ModelRequest.objects.filter(run=run).count() == 2
    assert runs[1].cost_usd == Decimal("0.5")
    assert not default_storage.exists(download.storage_path)
    assert StoredFile.objects.filter(pk=upload.pk).exists(), "the workspace's uploads are not the session's"
    assert not SessionShare.objects.filter(session=session).exists()


def test_usage_the_usage_page_and_the_admins_billing_add_up_the_same_after_a_purge(
    acme, api, alice_client, staff_client
):
    session = make_session(acme)
    produced_run(acme, session, cost="0.75")
    produced_run(acme, cost="1.5")

    def readings():
        return (
            api.get("/usage?group_by=model").json(),
            alice_client.get(reverse("platform:usage")).content.decode().split('name="csrfmiddlewaretoken"')[0],
            staff_client.get(f"{reverse(BILLING)}?format=csv").content,
        )

    before = readings()
    assert Decimal(before[0]["totals"]["cost_usd"]) == Decimal("2.25")
    assert api.post(f"/sessions/{session.public_id}/purge", {}).status_code == 200
    assert readings() == before


def test_a_session_with_a_run_going_is_not_purged(acme, api):
    session = make_session(acme)
    done = produced_run(acme, session)
    make_run(acme, session=session, status=Run.Status.RUNNING)
    answer = api.post(f"/sessions/{session.public_id}/purge", {})
    assert answer.status_code == 409 and "cancel" in answer.json()["error"]["message"]
    done.refresh_from_db()
    assert done.purged_at is None and Event.objects.filter(run=done).exists()


def test_an_operator_purges_from_the_session_page_and_charlie_cannot(acme, alice_client, charlie_client, umbrella_api):
    run = produced_run(acme)
    url = reverse("runs:session_purge", args=[run.session.public_id])
    assert charlie_client.post(url).status_code == 404
    assert umbrella_api.post(f"/sessions/{run.session.public_id}/purge", {}).status_code == 404
    run.refresh_from_db()
    assert run.purged_at is None

    page = alice_client.get(reverse("runs:session", args=[run.session.public_id])).content.decode()
    assert 'id="purge-form"' in page and "data-confirm" in page
    answer = alice_client.post(url, follow=True)
    assert "Purged 1 run" in answer.content.decode()
    run.refresh_from_db()
    assert run.purged_at is not None
