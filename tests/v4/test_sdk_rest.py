"""The rest of v4 through the official browser-use-sdk, unchanged but for its base URL, against Daphne: profiles,
workspace files uploaded by the SDK's own upload() (presign, then PUT to our signed URL), a run's attachments, a
session's queue, its share link opened signed out, and its purge. No worker: the runs here are rows the test makes."""

import uuid

import httpx
import pytest
from browser_use_sdk import BrowserUseError
from browser_use_sdk.v4 import BrowserUse
from django.core.files.base import ContentFile

from agent_platform.models import ModelRequest
from browser_use_v4.mapping import workspace_uuid
from runs.events import emit
from runs.files import StoredFile, store_file
from runs.models import Event, Run, RunMessage, Session
from runs.profiles.models import Profile
from tests.support import live
from tests.support.factories import make_run

asgi_server = live.asgi_server

pytestmark = pytest.mark.usefixtures("transactional_db")


def sdk(asgi_server: str, key: str) -> BrowserUse:
    return BrowserUse(api_key=key, base_url=f"{asgi_server}/api/v4")


def test_profiles_are_created_listed_read_updated_and_deleted(asgi_server, acme_key, umbrella_key, acme):
    client = sdk(asgi_server, acme_key)
    made = client.profiles.create(name="Supplier portal", user_id="user-42")
    assert made.name == "Supplier portal" and made.user_id == "user-42" and made.cookie_domains == []
    row = Profile.objects.get(uuid=made.id)
    assert row.workspace == acme and row.user_id == "user-42"
    unnamed = client.profiles.create()
    assert unnamed.name == "Untitled profile"

    listed = client.profiles.list(page_size=1, page_number=1)
    assert listed.total_items == 2 and len(listed.items) == 1 and listed.items[0].id == unnamed.id
    assert [item.id for item in client.profiles.list(query="supplier").items] == [made.id]
    assert client.profiles.get(made.id).name == "Supplier portal"
    assert client.profiles.get(row.public_id).id == made.id, "v1's id is taken too"

    updated = client.profiles.update(made.id, name="Portal (accounts@)", user_id=None)
    assert updated.name == "Portal (accounts@)" and updated.user_id is None
    with pytest.raises(BrowserUseError) as refused:
        client.profiles.update(made.id, name="x" * 101)
    assert refused.value.status_code == 422 and "name" in refused.value.message

    # Another workspace's key sees none of it.
    other = sdk(asgi_server, umbrella_key)
    assert other.profiles.list().total_items == 0
    for call in (lambda: other.profiles.get(made.id), lambda: other.profiles.delete(made.id)):
        with pytest.raises(BrowserUseError) as hidden:
            call()
        assert hidden.value.status_code == 404

    client.profiles.delete(made.id)
    assert not Profile.objects.filter(uuid=made.id).exists()


def test_the_sdks_upload_puts_files_into_the_workspace_which_lists_sizes_and_deletes_them(
    asgi_server, acme_key, umbrella_key, acme, tmp_path
):
    client = sdk(asgi_server, acme_key)
    workspace = client.workspaces.create(name="ignored")
    assert workspace.id == workspace_uuid(acme) and workspace.name == "Acme"
    assert client.workspaces.get(workspace.id).id == workspace.id
    with pytest.raises(BrowserUseError) as archive:
        client.workspaces.delete(workspace.id)
    assert archive.value.status_code == 501 and "archiving a workspace" in archive.value.message

    first = tmp_path / "orders.csv"
    first.write_bytes(b"id,total\n1,12.50\n")
    second = tmp_path / "notes.txt"
    second.write_bytes(b"Call back on Monday.")
    uploaded = client.workspaces.upload(workspace.id, first, second)

    assert [item.path for item in uploaded] == ["uploads/orders.csv", "uploads/notes.txt"]
    rows = {row.uuid: row for row in StoredFile.objects.filter(workspace=acme)}
    assert set(rows) == {item.id for item in uploaded}, "each file is kept under the id the presign gave"
    kept = rows[uploaded[0].id]
    assert kept.source == "upload" and kept.size == first.stat().st_size and kept.content_type == "text/csv"

    listed = client.workspaces.files(workspace.id, include_urls=True)
    assert [(entry.path, entry.size) for entry in listed.files] == [
        ("uploads/orders.csv", first.stat().st_size),
        ("uploads/notes.txt", second.stat().st_size),
    ]
    fetched = httpx.get(listed.files[0].url)
    assert fetched.status_code == 200 and fetched.content == first.read_bytes(), "the signed URL needs no key"
    assert "attachment" in fetched.headers["content-disposition"]
    page = client.workspaces.files(workspace.id, limit=1)
    assert page.has_more and [entry.path for entry in page.files] == ["uploads/orders.csv"]
    assert [e.path for e in client.workspaces.files(workspace.id, cursor=page.next_cursor).files] == [
        "uploads/notes.txt"
    ]
    size = client.workspaces.size(workspace.id)
    assert size.used_bytes == first.stat().st_size + second.stat().st_size and size.max_bytes > size.used_bytes

    # The same name again replaces the file (willOverride says so); allowOverrides=false is refused before a byte.
    first.write_bytes(b"id,total\n1,99.00\n")
    again = client.workspaces.upload(workspace.id, first)
    assert again[0].will_override is True
    assert StoredFile.objects.filter(workspace=acme, name="orders.csv").get().uuid == again[0].id

    client.workspaces.delete_file(workspace.id, path="uploads/notes.txt")
    assert [entry.path for entry in client.workspaces.files(workspace.id).files] == ["uploads/orders.csv"]
    with pytest.raises(BrowserUseError) as missing:
        client.workspaces.delete_file(workspace.id, path="uploads/notes.txt")
    assert missing.value.status_code == 404

    # Another workspace's key cannot read, list or upload into Acme's.
    other = sdk(asgi_server, umbrella_key)
    for call in (
        lambda: other.workspaces.get(workspace.id),
        lambda: other.workspaces.files(workspace.id),
        lambda: other.workspaces.upload(workspace.id, first),
    ):
        with pytest.raises(BrowserUseError) as hidden:
            call()
        assert hidden.value.status_code == 404


def test_an_upload_url_takes_exactly_its_bytes_once_and_not_after_tampering(asgi_server, acme_key, acme):
    client = sdk(asgi_server, acme_key)
    from browser_use_sdk.generated.v4.models import WorkspaceFileUploadItem

    ws = workspace_uuid(acme)
    item = WorkspaceFileUploadItem(name="a.txt", contentType="text/plain", size=5)
    url = client.workspaces.upload_files(ws, [item]).files[0].upload_url
    assert httpx.put(url, content=b"123456").status_code == 400, "more bytes than signed for"
    assert httpx.put(url[:-3] + "abc", content=b"12345").status_code == 403, "an altered URL"
    assert httpx.post(url, content=b"12345").status_code == 405
    assert httpx.put(url, content=b"12345").status_code == 200
    assert httpx.put(url, content=b"12345").status_code == 409, "used once only"
    assert StoredFile.objects.filter(workspace=acme).count() == 1


def test_a_launch_takes_attached_file_ids_and_a_profile_and_refuses_strangers(asgi_server, acme_key, acme, tmp_path):
    client = sdk(asgi_server, acme_key)
    ws = client.workspaces.create()
    path = tmp_path / "brief.txt"
    path.write_bytes(b"The brief.")
    uploaded = client.workspaces.upload(ws.id, path)
    profile = client.profiles.create(name="Shop account")

    created = client.runs.create(
        "Read the brief.",
        workspace_id=ws.id,
        attached_file_ids=[uploaded[0].id],
        browser_settings={"profileId": str(profile.id), "proxyCountryCode": None},
    )
    run = Run.objects.get(uuid=created.id)
    assert [row.uuid for row in run.given_files.all()] == [uploaded[0].id]
    assert run.profile.uuid == profile.id and run.save_profile is True

    for kwargs, field in (
        ({"attached_file_ids": [str(uuid.uuid4())]}, "attachedFileIds"),
        ({"workspace_id": str(uuid.uuid4())}, "workspaceId"),
        ({"browser_settings": {"profileId": str(uuid.uuid4()), "proxyCountryCode": None}}, "profileId"),
    ):
        with pytest.raises(BrowserUseError) as refused:
            client.runs.create("Read the brief.", **kwargs)
        assert refused.value.status_code == 422 and field in refused.value.message
    with pytest.raises(BrowserUseError) as managed:
        client.runs.create("Read the brief.", browser_settings={"proxyCountryCode": "de"})
    assert managed.value.status_code == 501 and "proxyCountryCode" in managed.value.message


def test_a_runs_attachments_are_its_downloads(asgi_server, acme_key, umbrella_key, acme):
    run = make_run(acme)
    row = store_file(acme, ContentFile(b"%PDF-1.4 invoice"), name="invoice.pdf", source="download", run=run)
    store_file(acme, ContentFile(b"given"), name="given.txt", source="upload")
    attachments = sdk(asgi_server, acme_key).runs.attachments(run.uuid).attachments
    assert [(a.id, a.name, a.content_type, a.size_bytes, a.status.value) for a in attachments] == [
        (row.uuid, "invoice.pdf", "application/pdf", 16, "uploaded")
    ]
    listed = sdk(asgi_server, acme_key).workspaces.files(workspace_uuid(acme), prefix=f"runs/{run.uuid}/")
    assert [entry.path for entry in listed.files] == [f"runs/{run.uuid}/invoice.pdf"]
    with pytest.raises(BrowserUseError) as hidden:
        sdk(asgi_server, umbrella_key).runs.attachments(run.uuid)
    assert hidden.value.status_code == 404


def test_a_message_to_a_busy_session_is_queued_for_its_agent_and_can_be_withdrawn(asgi_server, acme_key, acme):
    client = sdk(asgi_server, acme_key)
    run = make_run(acme, status=Run.Status.RUNNING)
    sent = client.sessions.send_message(run.session.uuid, "Only 2026 invoices.")
    assert sent.status.value == "pending" and sent.run_id == run.uuid and sent.mode.value == "queue"
    assert RunMessage.objects.get(pk=sent.id).text == "Only 2026 invoices."
    again = client.sessions.send_message(run.session.uuid, "Only 2026 invoices.", deduplicate="exact-text-v1")
    assert again.id == sent.id, "an equal pending message is reused"
    other = client.sessions.send_message(run.session.uuid, "And skip drafts.")
    assert [m.id for m in client.sessions.queue(run.session.uuid).queue] == [sent.id, other.id]

    removed = client.sessions.remove_message(run.session.uuid, other.id)
    assert removed.status.value == "cancelled"
    assert [m.id for m in client.sessions.queue(run.session.uuid).queue] == [sent.id]
    assert Event.objects.filter(run=run, type="run.message_withdrawn").exists()

    RunMessage.objects.filter(pk=sent.id).update(delivered_at=run.created_at)
    assert client.sessions.get_message(run.session.uuid, sent.id).status.value == "consumed"
    with pytest.raises(BrowserUseError) as delivered:
        client.sessions.remove_message(run.session.uuid, sent.id)
    assert delivered.value.status_code == 409
    with pytest.raises(BrowserUseError) as interrupt:
        client.sessions.send_message(run.session.uuid, "Stop.", interrupt=True)
    assert interrupt.value.status_code == 501


def test_a_message_to_an_idle_session_is_its_follow_up_run(asgi_server, acme_key, acme):
    client = sdk(asgi_server, acme_key)
    first = make_run(acme, status=Run.Status.SUCCEEDED)
    sent = client.sessions.send_message(first.session.uuid, "Now open the second page.")
    assert sent.status.value == "consumed"
    follow_up = Run.objects.get(uuid=sent.run_id)
    assert follow_up.session == first.session and follow_up.task == "Now open the second page."
    assert follow_up.model == first.model


def test_a_share_link_opens_signed_out_counts_views_and_stops_when_turned_off(
    asgi_server, acme_key, umbrella_key, acme
):
    client = sdk(asgi_server, acme_key)
    run = make_run(acme, status=Run.Status.SUCCEEDED, success=True, output="Three books.", task="List the books.")
    emit(run, "agent.message", {"turn": 1, "text": "Reading the shop."})
    assert client.sessions.get_share(run.session.uuid) is None

    share = client.sessions.create_share(run.session.uuid)
    assert share.is_active and share.view_count == 0 and share.session_id == run.session.uuid
    assert len(share.share_token) >= 40 and share.share_url.endswith(f"/share/{share.share_token}/")
    assert client.sessions.create_share(run.session.uuid).share_token == share.share_token, "its token is kept"

    page = httpx.get(share.share_url)
    assert page.status_code == 200 and "List the books." in page.text and "Three books." in page.text
    assert "Reading the shop." in page.text and page.headers["referrer-policy"] == "no-referrer"
    httpx.get(share.share_url)
    assert client.sessions.get_share(run.session.uuid).view_count == 2

    with pytest.raises(BrowserUseError) as hidden:
        sdk(asgi_server, umbrella_key).sessions.create_share(run.session.uuid)
    assert hidden.value.status_code == 404

    off = client.sessions.update_share(run.session.uuid, is_active=False)
    assert off.is_active is False
    assert httpx.get(share.share_url).status_code == 410
    assert client.sessions.update_share(run.session.uuid, is_active=True).share_token == share.share_token
    assert httpx.get(share.share_url).status_code == 200
    assert httpx.get(share.share_url.replace(share.share_token, "x" * 43)).status_code == 404


def test_a_purge_removes_the_sessions_content_and_keeps_its_bill(asgi_server, acme_key, umbrella_key, acme):
    client = sdk(asgi_server, acme_key)
    run = make_run(acme, status=Run.Status.SUCCEEDED, output="Secret plans.", data={"a": 1}, cost_usd="0.5")
    emit(run, "agent.message", {"turn": 1, "text": "Reading."})
    store_file(acme, ContentFile(b"bytes"), name="plans.pdf", source="download", run=run)
    ModelRequest.objects.create(
        workspace=acme, run=run, source="agent", model=run.model, input_tokens=10, output_tokens=5, cost_usd="0.5"
    )
    with pytest.raises(BrowserUseError) as hidden:
        sdk(asgi_server, umbrella_key).sessions.purge(run.session.uuid)
    assert hidden.value.status_code == 404

    client.sessions.purge(run.session.uuid)
    run.refresh_from_db()
    assert run.purged_at is not None and run.task == "" and run.output == "" and run.data is None
    assert not Event.objects.filter(run=run).exists() and not StoredFile.objects.filter(run=run).exists()
    assert ModelRequest.objects.filter(run=run).count() == 1 and str(run.cost_usd) == "0.50000000"
    assert Session.objects.filter(pk=run.session.pk).exists()
    assert client.runs.get(run.uuid).total_cost_usd == "0.5"
