"""Artifacts in object storage: with STORAGE_URL=s3://… a real worker keeps a run's screenshots (the live view's
images, the final view), its trace and its files in a real S3 server's bucket, and a web process whose own
MEDIA_ROOT is empty serves them through the same workspace-checked views; another workspace gets 404."""

import io
import zipfile

import pytest

from agent_platform.object_storage import parse_storage_url, storages_setting
from runs.models import Run
from runs.presenters import screenshots
from tests.support import s3_server as s3
from tests.support.factories import make_run
from tests.support.launching import enqueue, events, finished
from tests.support.replies import browser, done
from tests.support.workers import WorkerProcess, worker_environment

s3_server = s3.s3_server

STORAGE_QUEUE = "object-storage-tests"


@pytest.fixture
def bucket_worker(django_db_blocker, clean_broker, messages_stub_server, s3_server, tmp_path):
    """A worker keeping its files in the bucket; its own MEDIA_ROOT must stay empty."""
    media = tmp_path / "worker-media"
    with django_db_blocker.unblock():
        env = worker_environment({**s3_server.environment(), "MEDIA_ROOT": str(media)})
    worker = WorkerProcess(env, tmp_path / "worker.log", queues=STORAGE_QUEUE).start()
    worker.media_root = media
    yield worker
    worker.stop()


@pytest.fixture
def web_on_the_bucket(s3_server, settings, monkeypatch, tmp_path):
    """This process as a web machine on the bucket: the same variables, and a MEDIA_ROOT of its own, empty."""
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    media = tmp_path / "web-media"
    media.mkdir()
    settings.STORAGES = storages_setting(parse_storage_url(s3_server.storage_url))
    settings.MEDIA_ROOT = str(media)
    return media


def files_under(folder) -> list:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("transactional_db")
def test_a_runs_screenshots_and_trace_live_in_the_bucket_and_are_served_from_it(
    acme,
    api,
    umbrella_api,
    alice_client,
    charlie_client,
    site,
    messages_stub,
    s3_server,
    bucket_worker,
    web_on_the_bucket,
):
    # A file uploaded to the web lands in the bucket; the worker the run is given it on reads it from there.
    uploaded = api.post_file("/files", "order.csv", b"name,qty\nwidget,2\n")
    assert uploaded.status_code == 201, uploaded.content
    file_id = uploaded.json()["id"]
    assert s3_server.keys(f"files/{acme.pk}/") == [f"files/{acme.pk}/{file_id}"]
    messages_stub.agent(browser("navigate", url=f"{site}/runtime_shop.html"), done(True, "Seen."))
    run = make_run(acme, task="Open the shop.", start_url=f"{site}/index.html")
    run.given_files.set(acme.files.filter(public_id=file_id))
    run = finished(enqueue(run, queue=STORAGE_QUEUE))
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert "order.csv (18 bytes" in str(messages_stub.requests[0]["messages"][0]["content"])
    content = api.get(f"/files/{file_id}/content")
    assert content.status_code == 200 and b"".join(content.streaming_content) == b"name,qty\nwidget,2\n"
    assert umbrella_api.get(f"/files/{file_id}/content").status_code == 404

    # In the bucket, under the prefix: the live view's image of the action turn, the final view, the trace.
    shown = screenshots(events(run))
    names = [item["url"].rstrip("/").rsplit("/", 1)[-1] for item in shown]
    assert len(names) == 2 and names[0].endswith(".jpg") and names[1].endswith(".png"), shown
    assert s3_server.keys(f"screenshots/{run.public_id}/") == sorted(
        f"screenshots/{run.public_id}/{name}" for name in names
    )
    assert s3_server.keys(f"traces/{run.public_id}/") == [f"traces/{run.public_id}/trace.zip"]
    assert files_under(bucket_worker.media_root) == []

    # Served by the web through the workspace check, byte for byte what the bucket holds.
    for item, name in zip(shown, names, strict=True):
        response = alice_client.get(item["url"])
        assert response.status_code == 200
        assert response["Content-Type"] == ("image/jpeg" if name.endswith(".jpg") else "image/png")
        assert response["Cache-Control"] == "private, max-age=86400"
        assert b"".join(response.streaming_content) == s3_server.read(f"screenshots/{run.public_id}/{name}")
    page = alice_client.get(f"/runs/{run.public_id}/")
    assert f"/runs/{run.public_id}/trace.zip" in page.content.decode()  # the page found the trace in the bucket

    trace = alice_client.get(f"/runs/{run.public_id}/trace.zip")
    assert trace.status_code == 200
    assert trace["Content-Disposition"] == f'attachment; filename="{run.public_id}-trace.zip"'
    assert trace["Cache-Control"] == "private, no-store"
    body = b"".join(trace.streaming_content)
    assert body == s3_server.read(f"traces/{run.public_id}/trace.zip")
    assert any(name.endswith(".trace") for name in zipfile.ZipFile(io.BytesIO(body)).namelist())

    # Another workspace's member learns nothing, not even that the files exist.
    for url in [item["url"] for item in shown] + [f"/runs/{run.public_id}/trace.zip"]:
        assert charlie_client.get(url).status_code == 404
    # A name that is not in the bucket is 404 too, for the owner.
    missing = shown[0]["url"].rsplit("/", 1)[0] + "/" + "0" * 32 + ".png"
    assert alice_client.get(missing).status_code == 404

    # Nothing was read from, or written to, the web's own disk; the bucket's keys are in no log line.
    assert files_under(web_on_the_bucket) == []
    assert s3.SECRET_ACCESS_KEY not in bucket_worker.log_path.read_text(errors="replace")
