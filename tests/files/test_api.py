"""The files API in process: uploads and their limit, a file's bytes to its workspace only, a run's list, file_ids."""

import hashlib

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from runs.files import StoredFile
from runs.models import Run
from tests.support.clients import ApiClient
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


def upload(key: str, name: str, data: bytes, content_type: str = "application/octet-stream"):
    return ApiClient(key).post_file("/files", name, data, content_type)


def test_an_upload_is_stored_and_answered_with_its_sha256(acme_key, acme):
    data = b"name,qty\nwidget,2\n"

    response = upload(acme_key, "../order.csv", data)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["id"].startswith("file_")
    assert body["name"] == "order.csv"
    assert body["size"] == len(data)
    assert body["sha256"] == hashlib.sha256(data).hexdigest()
    assert body["source"] == "upload"
    assert body["content_type"] == "text/csv"
    assert set(body) == {"id", "name", "size", "content_type", "sha256", "source", "created_at"}
    row = StoredFile.objects.get(public_id=body["id"])
    assert row.workspace == acme and row.run is None
    assert row.name not in row.storage_path  # bytes are kept by id, never by the outside name


def test_an_upload_over_the_limit_is_413_in_the_envelope_and_keeps_nothing(acme_key, settings):
    settings.FILE_UPLOAD_MAX_BYTES = 1000

    response = upload(acme_key, "big.bin", b"x" * 5000)

    assert response.status_code == 413
    error = response.json()["error"]
    assert error["type"] == "invalid_request"
    assert error["detail"] == {"limit": 1000}
    assert not StoredFile.objects.exists()


def test_an_upload_without_the_file_part_or_as_json_is_refused(api, acme_key):
    response = Client().post("/api/v1/files", {"other": "x"}, headers={"Authorization": f"Bearer {acme_key}"})
    assert response.status_code == 400
    assert "file" in response.json()["error"]["message"]
    assert api.post("/files", {"file": "abc"}).status_code == 415


def test_an_upload_needs_a_key(client):
    assert client.post("/api/v1/files", {"file": SimpleUploadedFile("a.txt", b"a")}).status_code == 401


def test_content_is_an_attachment_with_a_safe_name_and_nosniff(acme_key, api):
    data = b"<html><script>alert(1)</script></html>"
    file_id = upload(acme_key, "résumé.html", data).json()["id"]

    response = api.get(f"/files/{file_id}/content")

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == data
    disposition = response["Content-Disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=utf-8''r%C3%A9sum%C3%A9.html" in disposition
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]


def test_a_file_whose_bytes_are_gone_is_404_and_a_deleted_row_takes_its_bytes(
    acme_key, api, django_capture_on_commit_callbacks
):
    file_id = upload(acme_key, "a.txt", b"abc").json()["id"]
    row = StoredFile.objects.get(public_id=file_id)
    assert default_storage.exists(row.storage_path)

    with django_capture_on_commit_callbacks(execute=True):
        row.delete()  # as a run's or a workspace's deletion cascades to it

    assert not default_storage.exists(row.storage_path)
    recreated = upload(acme_key, "b.txt", b"abc").json()["id"]
    default_storage.delete(StoredFile.objects.get(public_id=recreated).storage_path)
    missing = api.get(f"/files/{recreated}/content")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"


def test_another_workspaces_file_is_404(acme_key, umbrella_api):
    file_id = upload(acme_key, "a.txt", b"a").json()["id"]

    response = umbrella_api.get(f"/files/{file_id}/content")

    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found"
    assert umbrella_api.get("/files/file_unknown/content").status_code == 404


def test_a_runs_files_list_its_given_files_and_another_workspace_sees_404(acme, acme_key, api, umbrella_api):
    file_id = upload(acme_key, "a.txt", b"a").json()["id"]
    run = make_run(acme)
    run.given_files.set(StoredFile.objects.filter(public_id=file_id))

    listed = api.get(f"/runs/{run.public_id}/files").json()["files"]

    assert [item["id"] for item in listed] == [file_id]
    assert umbrella_api.get(f"/runs/{run.public_id}/files").status_code == 404


def test_a_launch_takes_file_ids_of_its_workspace(acme_key, api, settings, monkeypatch):
    monkeypatch.setattr("runs.lifecycle.enqueue", lambda run_id: None)
    file_id = upload(acme_key, "a.txt", b"a").json()["id"]

    response = api.post("/runs", {"task": "Upload the file.", "file_ids": [file_id]})

    assert response.status_code == 201, response.content
    run = Run.objects.get(public_id=response.json()["id"])
    assert [row.public_id for row in run.given_files.all()] == [file_id]


@pytest.mark.parametrize("file_ids", [["file_doesnotexist"], "file_x", [1]])
def test_unknown_or_malformed_file_ids_are_invalid_request_naming_file_ids(api, file_ids, monkeypatch):
    monkeypatch.setattr("runs.lifecycle.enqueue", lambda run_id: None)

    response = api.post("/runs", {"task": "Upload the file.", "file_ids": file_ids})

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request"
    assert "file_ids" in error["message"]
    assert not Run.objects.exists()


def test_another_workspaces_file_id_is_refused_as_unknown(umbrella_key, api, monkeypatch):
    monkeypatch.setattr("runs.lifecycle.enqueue", lambda run_id: None)
    foreign = upload(umbrella_key, "theirs.txt", b"t").json()["id"]

    response = api.post("/runs", {"task": "Upload the file.", "file_ids": [foreign]})

    assert response.status_code == 400
    assert response.json()["error"]["message"].startswith("file_ids:")
    assert not Run.objects.exists()


def test_a_body_declared_past_the_limit_is_refused_before_a_byte_is_read(settings):
    import asyncio
    import json

    from agent_platform.asgi import http_app

    settings.FILE_UPLOAD_MAX_BYTES = 1000
    sent = []

    async def receive():
        raise AssertionError("the body was read")

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/files",
        "headers": [(b"content-length", str(10 * 1024 * 1024).encode())],
    }
    asyncio.run(http_app(scope, receive, send))

    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["error"]["detail"] == {"limit": 1000}


def test_the_launch_form_uploads_its_files_and_gives_them_to_the_run(alice_client, acme, monkeypatch):
    monkeypatch.setattr("runs.lifecycle.enqueue", lambda run_id: None)

    response = alice_client.post(
        "/runs/new/",
        {"task": "Upload the form.", "files": [SimpleUploadedFile("form.pdf", b"%PDF-1.4 form")]},
    )

    assert response.status_code == 302, response.content[:500]
    run = Run.objects.get(workspace=acme)
    assert [row.name for row in run.given_files.all()] == ["form.pdf"]


def test_the_run_page_lists_its_files_and_serves_them_to_its_workspace_only(
    alice_client, charlie_client, acme, acme_key
):
    file_id = upload(acme_key, "Tom & Jerry's <notes>.txt", b"hello").json()["id"]
    run = make_run(acme)
    run.given_files.set(StoredFile.objects.filter(public_id=file_id))

    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    link = f"/runs/{run.public_id}/files/{file_id}"

    assert link in page
    assert "Tom &amp; Jerry&#x27;s _notes_.txt" in page  # sanitized, then escaped
    served = alice_client.get(link)
    assert served.status_code == 200
    assert served["Content-Disposition"].startswith("attachment;")
    assert served["X-Content-Type-Options"] == "nosniff"
    assert charlie_client.get(link).status_code == 404
    other = make_run(acme)
    assert alice_client.get(f"/runs/{other.public_id}/files/{file_id}").status_code == 404


def test_the_admin_lists_files_read_only(admin_client, acme_key):
    file_id = upload(acme_key, "ledger.csv", b"a,b\n").json()["id"]
    row = StoredFile.objects.get(public_id=file_id)

    listing = admin_client.get("/admin/runs/storedfile/")
    change = admin_client.get(f"/admin/runs/storedfile/{row.pk}/change/")

    assert listing.status_code == 200 and "ledger.csv" in listing.content.decode()
    assert change.status_code == 200
    assert 'name="sha256"' not in change.content.decode()  # shown, not editable
