"""A run's downloads through a real worker and Chromium: a link with a download attribute, an attachment response and
a blob are kept with the right sha256 and served to their workspace only; past the size or count limit, or from a
refused destination, nothing is kept and the agent is told; file.downloaded is an event and a webhook."""

import json

import pytest

from runs.files import StoredFile
from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support import file_site as files
from tests.support.file_site import (
    BLOB_BYTES,
    FILES_MAX_BYTES,
    FILES_QUEUE,
    INVOICE_PDF,
    REPORT_CSV,
    SPOTS,
    sha256,
)
from tests.support.launching import events, finished, launch
from tests.support.replies import browser, done, last_tool_result_text
from webhooks.models import Delivery, Endpoint

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
file_site = files.file_site
files_worker = files.files_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("files_worker", "transactional_db")]


@pytest.fixture(autouse=True)
def shared_media(settings, files_worker):
    """The web side reads what the worker stored: one storage for both, as in production."""
    settings.MEDIA_ROOT = str(files_worker.media_root)


def click(name: str) -> dict:
    x, y = SPOTS[name]
    return browser("left_click", target={"type": "coordinate", "x": x, "y": y})


def test_a_link_an_attachment_and_a_blob_are_kept_and_served_to_their_workspace_only(
    acme, file_site, messages_stub, api, umbrella_api
):
    Endpoint.objects.create(workspace=acme, url="https://hooks.example.com/pilothouse", events=["file.downloaded"])
    messages_stub.agent(
        click("report"), click("invoice"), click("blob"), browser("wait", duration=1), done(True, "Saved the files.")
    )

    run = finished(launch(acme, queue=FILES_QUEUE, start_url=f"{file_site.url}/downloads.html"))

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    kept = {row.name: row for row in StoredFile.objects.filter(run=run)}
    assert set(kept) == {"report.csv", "invoice-nº7.pdf", "notes.txt"}
    assert kept["report.csv"].sha256 == sha256(REPORT_CSV)
    assert kept["invoice-nº7.pdf"].sha256 == sha256(INVOICE_PDF)
    assert kept["notes.txt"].sha256 == sha256(BLOB_BYTES)
    assert all(row.source == "download" and row.workspace == acme for row in kept.values())

    # the results told the agent what arrived, name and size (a download that starts after its click returned is
    # reported with the next call)
    told = "\n".join(last_tool_result_text(request) for request in messages_stub.requests[1:5])
    assert f"'report.csv' ({len(REPORT_CSV)} bytes" in told
    assert f"'invoice-nº7.pdf' ({len(INVOICE_PDF)} bytes" in told
    assert f"'notes.txt' ({len(BLOB_BYTES)} bytes" in told

    downloaded = [event.payload for event in events(run, "file.downloaded")]
    assert {item["name"] for item in downloaded} == set(kept)
    for item in downloaded:
        assert item == {"id": item["id"], "name": item["name"], "size": kept[item["name"]].size,
                        "sha256": kept[item["name"]].sha256}  # fmt: skip
    deliveries = Delivery.objects.filter(event_type="file.downloaded", endpoint__workspace=acme)
    assert deliveries.count() == 3
    body = json.loads(deliveries.first().body)
    assert body["type"] == "file.downloaded"
    assert body["data"]["run"]["id"] == run.public_id
    assert body["data"]["file"]["id"] in {row.public_id for row in kept.values()}

    listed = api.get(f"/runs/{run.public_id}/files").json()["files"]
    assert {item["sha256"] for item in listed} == {row.sha256 for row in kept.values()}
    invoice = kept["invoice-nº7.pdf"]
    response = api.get(f"/files/{invoice.public_id}/content")
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == INVOICE_PDF
    assert "filename*=utf-8''invoice-n%C2%BA7.pdf" in response["Content-Disposition"]
    assert umbrella_api.get(f"/files/{invoice.public_id}/content").status_code == 404
    assert umbrella_api.get(f"/runs/{run.public_id}/files").status_code == 404


def test_a_download_over_the_size_limit_is_refused_and_the_agent_told(acme, file_site, messages_stub):
    messages_stub.agent(click("big"), browser("wait", duration=1), done(True, "Tried."))

    run = finished(launch(acme, queue=FILES_QUEUE, start_url=f"{file_site.url}/downloads.html"))

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert not StoredFile.objects.filter(run=run).exists()
    told = "\n".join(last_tool_result_text(request) for request in messages_stub.requests[1:3])
    assert "'big.bin' was refused" in told and f"limit of {FILES_MAX_BYTES} bytes" in told
    assert not events(run, "file.downloaded")


def test_downloads_past_the_count_limit_are_refused(acme, file_site, messages_stub):
    messages_stub.agent(
        click("report"),
        click("invoice"),
        click("blob"),
        browser("wait", duration=1),
        click("report"),
        browser("wait", duration=1),
        done(True, "Downloaded what I could."),
    )

    run = finished(launch(acme, queue=FILES_QUEUE, start_url=f"{file_site.url}/downloads.html"))

    assert StoredFile.objects.filter(run=run).count() == files.FILES_MAX_FILES
    told = "\n".join(last_tool_result_text(request) for request in messages_stub.requests[5:7])
    assert f"at most {files.FILES_MAX_FILES} files" in told


def test_a_download_from_a_refused_destination_is_not_kept(acme, file_site, messages_stub):
    messages_stub.agent(click("refused"), done(True, "Tried."))

    run = finished(launch(acme, queue=FILES_QUEUE, start_url=f"{file_site.url}/downloads.html"))

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert not StoredFile.objects.filter(run=run).exists()
    assert events(run, "network.blocked")
    assert "refused" in last_tool_result_text(messages_stub.requests[1])  # the agent is told
