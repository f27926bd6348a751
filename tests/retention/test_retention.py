"""Retention: each workspace keeps its runs' content `retention_days` days; the beat's hourly task purges runs that
ended before that and deletes older uploads, their objects gone from a real S3 server's bucket, and the bill is the
same after it. A workspace with no number keeps everything; a run not yet that old is untouched."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from agent_platform.models import DEFAULT_RETENTION_DAYS, ModelRequest, Workspace
from agent_platform.object_storage import parse_storage_url, storages_setting
from runs.files import StoredFile, store_file
from runs.models import Run
from runs.screenshots import save_screenshot
from runs.traces import trace_path
from runtime import tasks
from tests.support import s3_server as s3
from tests.support.factories import make_run

s3_server = s3.s3_server

pytestmark = pytest.mark.django_db


@pytest.fixture
def on_the_bucket(s3_server, settings, monkeypatch, tmp_path):
    """This process keeps its files in the S3 server's bucket, as every web and worker machine would."""
    for name, value in s3_server.environment().items():
        monkeypatch.setenv(name, value)
    settings.STORAGES = storages_setting(parse_storage_url(s3_server.storage_url))
    settings.MEDIA_ROOT = str(tmp_path / "empty-media")
    return s3_server


def ended_days_ago(workspace: Workspace, days: int) -> Run:
    ended = timezone.now() - timedelta(days=days)
    run = make_run(workspace, status=Run.Status.SUCCEEDED, output="Done.", finished_at=ended, cost_usd=Decimal("0.2"))
    save_screenshot(run.public_id, b"a live-view image", "jpg")
    default_storage.save(trace_path(run.public_id), ContentFile(b"PK trace"))
    store_file(workspace, ContentFile(b"invoice"), name="invoice.pdf", source="download", run=run)
    ModelRequest.objects.create(
        workspace=workspace, run=run, source="agent", model=run.model, input_tokens=9, cost_usd=Decimal("0.2")
    )
    return run


def test_the_beat_purges_what_is_older_than_the_workspace_keeps_in_the_bucket_too(
    on_the_bucket, acme, umbrella, api, django_capture_on_commit_callbacks
):
    acme.retention_days = 7
    acme.save()
    umbrella.retention_days = None
    umbrella.save()
    old, recent, kept_forever = ended_days_ago(acme, 10), ended_days_ago(acme, 2), ended_days_ago(umbrella, 400)
    old_upload = store_file(acme, ContentFile(b"old brief"), name="old.txt", source="upload")
    StoredFile.objects.filter(pk=old_upload.pk).update(created_at=timezone.now() - timedelta(days=8))
    new_upload = store_file(acme, ContentFile(b"new brief"), name="new.txt", source="upload")
    assert on_the_bucket.keys(f"screenshots/{old.public_id}/") and on_the_bucket.keys(f"traces/{old.public_id}/")
    usage_before = api.get("/usage").json()

    with django_capture_on_commit_callbacks(execute=True):
        done = tasks.apply_retention()

    assert done == {"runs": 1, "files": 1}
    for run in (old, recent, kept_forever):
        run.refresh_from_db()
    assert old.purged_at is not None and old.output == "" and recent.purged_at is None
    assert kept_forever.purged_at is None, "a workspace with no retention keeps everything"
    assert on_the_bucket.keys(f"screenshots/{old.public_id}/") == [] == on_the_bucket.keys(f"traces/{old.public_id}/")
    assert on_the_bucket.keys(f"screenshots/{recent.public_id}/"), "a run not that old keeps its objects"
    assert on_the_bucket.keys(f"files/{acme.pk}/") == sorted(
        [f"files/{acme.pk}/{row.public_id}" for row in StoredFile.objects.filter(workspace=acme)]
    )
    assert not StoredFile.objects.filter(pk=old_upload.pk).exists()
    assert StoredFile.objects.filter(pk=new_upload.pk).exists()
    assert api.get("/usage").json() == usage_before
    assert ModelRequest.objects.filter(run=old).count() == 1

    # A second pass has nothing left to do.
    assert tasks.apply_retention() == {"runs": 0, "files": 0}


def test_retention_is_on_the_beats_schedule_as_the_reaper_is_and_new_workspaces_keep_30_days(db):
    entry = settings.CELERY_BEAT_SCHEDULE["apply-retention"]
    assert entry["task"] == tasks.apply_retention.name == "runtime.tasks.apply_retention"
    assert entry["schedule"] == 3600.0
    assert settings.CELERY_BEAT_SCHEDULER == "django_celery_beat.schedulers:DatabaseScheduler"
    assert Workspace.objects.create(name="New", slug="new").retention_days == DEFAULT_RETENTION_DAYS == 30
