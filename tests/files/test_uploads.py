"""An uploaded file given to a run (file_ids) is set on a page's file input by the SDK's own file_upload member, and
the page receives its bytes; a path outside the run's directory is refused by the file policy."""

import hashlib
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support import file_site as files
from tests.support.factories import make_run
from tests.support.file_site import FILES_QUEUE
from tests.support.launching import enqueue, finished, wait_for
from tests.support.replies import browser, done, last_tool_result_text

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
file_site = files.file_site
files_worker = files.files_worker

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("files_worker", "transactional_db")]

DOCUMENT = b"%PDF-1.4\n% the operator's signed form\n" + bytes(range(256)) * 4


@pytest.fixture(autouse=True)
def shared_media(settings, files_worker):
    settings.MEDIA_ROOT = str(files_worker.media_root)


def first_message_text(request: dict) -> str:
    return "\n".join(
        block.get("text", "") for block in request["messages"][0]["content"] if block.get("type") == "text"
    )


def given_path(request: dict, name: str) -> str:
    found = re.search(rf"^- (\S+/{re.escape(name)}) \(", first_message_text(request), re.M)
    assert found, first_message_text(request)
    return found.group(1)


def ref_in_last_result(request: dict, label: str) -> str:
    line = next(line for line in last_tool_result_text(request).splitlines() if label in line)
    return re.search(r"\[ref=(e\d+)\]", line).group(1)


def test_an_uploaded_file_is_set_on_a_file_input_and_the_page_receives_its_bytes(
    acme, acme_key, file_site, messages_stub, files_worker
):
    uploaded = Client().post(
        "/api/v1/files",
        {"file": SimpleUploadedFile("signed form.pdf", DOCUMENT)},
        headers={"Authorization": f"Bearer {acme_key}"},
    )
    assert uploaded.status_code == 201
    file_id = uploaded.json()["id"]

    def set_the_file(request: dict) -> dict:
        return browser(
            "file_upload",
            target={"type": "ref", "ref": ref_in_last_result(request, "Document")},
            paths=[given_path(request, "signed form.pdf")],
        )

    def send(request: dict) -> dict:
        return browser("left_click", target={"type": "ref", "ref": ref_in_last_result(request, "Send")})

    messages_stub.agent(
        browser("find", query="Document"),
        set_the_file,
        browser("find", query="Send"),
        send,
        browser("file_upload", target={"type": "ref", "ref": "e1"}, paths=["/etc/passwd"]),
        done(True, "Sent the form."),
    )
    run = make_run(acme, start_url=f"{file_site.url}/upload.html")
    run.given_files.set(acme.files.filter(public_id=file_id))

    run = finished(enqueue(run, FILES_QUEUE))

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    first = first_message_text(messages_stub.requests[0])
    assert "signed form.pdf" in first and f"{len(DOCUMENT)} bytes" in first
    received = wait_for(lambda: list(file_site.received), message="the upload to reach the page")
    assert received == [{"name": "signed form.pdf", "sha256": hashlib.sha256(DOCUMENT).hexdigest()}]
    # the file policy keeps the agent inside the run's own directory
    refused = messages_stub.requests[5]["messages"][-1]["content"][0]
    assert refused["is_error"] is True
    assert "outside the configured upload roots" in str(refused["content"]), "refused by the file policy"
    # the run's directory on the worker is gone once it ended
    assert not (files_worker.run_files / run.public_id).exists()
