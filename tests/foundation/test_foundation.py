"""The foundation: settings fail loudly, workspaces are walls, API keys authenticate, a real worker runs tasks."""

import io
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from agent_platform.celery import app
from agent_platform.models import ApiKey
from runs.models import Event, Run
from runs.tasks import reap_stale_runs
from tests.support.clients import ApiClient
from tests.support.factories import make_run
from tests.support.launching import wait_for
from tests.support.paths import REPO


def test_bad_setting_value_fails_loudly():
    env = {**os.environ, "DEBUG": "maybe"}
    result = subprocess.run(
        [sys.executable, "-c", "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='agent_platform.settings'; django.setup()"],
        cwd=REPO, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_login_page_is_served(client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b"Sign in to Pilothouse" in response.content


def test_pages_need_a_login(client, db):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_member_sees_own_workspace_run(alice_client, acme):
    run = make_run(acme)
    response = alice_client.get(f"/runs/{run.public_id}/")
    assert response.status_code == 200
    assert run.public_id in response.content.decode()


def test_charlie_is_refused_acme_run_page(charlie_client, acme):
    run = make_run(acme)
    response = charlie_client.get(f"/runs/{run.public_id}/")
    assert response.status_code == 404
    assert run.task not in response.content.decode()


def test_charlie_is_refused_acme_screenshot(charlie_client, acme):
    run = make_run(acme)
    response = charlie_client.get(f"/runs/{run.public_id}/screenshots/{'0' * 32}.png")
    assert response.status_code == 404


def test_a_live_view_jpeg_is_served_to_its_workspace_as_a_jpeg(alice_client, charlie_client, acme, settings, tmp_path):
    from runs.screenshots import save_screenshot

    settings.MEDIA_ROOT = str(tmp_path)
    run = make_run(acme)
    url = save_screenshot(run.public_id, b"\xff\xd8\xff\xe0 a JPEG's first bytes", extension="jpg")

    response = alice_client.get(url)

    assert url.endswith(".jpg") and response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"
    assert b"".join(response.streaming_content).startswith(b"\xff\xd8\xff")
    assert charlie_client.get(url).status_code == 404


def test_charlie_runs_list_does_not_show_acme_runs(charlie_client, acme):
    run = make_run(acme)
    response = charlie_client.get("/")
    assert response.status_code == 200
    assert run.public_id not in response.content.decode()


def test_api_key_authenticates_until_revoked(acme):
    key, secret = ApiKey.issue(acme)
    client = ApiClient(secret)
    response = client.get("/workspace")
    assert response.status_code == 200
    assert response.json() == {"id": "acme", "name": "Acme"}
    key.revoke()
    response = client.get("/workspace")
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_api_key_secret_is_stored_hashed(acme):
    key, secret = ApiKey.issue(acme)
    assert secret.split("_", 2)[2] not in key.hashed_secret
    assert secret.startswith("ph_" + key.prefix + "_")


@pytest.mark.parametrize(
    "authorization",
    ["", "Bearer", "Bearer nonsense", "Bearer ph_", "Bearer ph_abcdef_wrong", "Basic dXNlcjpwYXNz", "Bearer ph_x" * 50],
)
def test_malformed_or_unknown_keys_get_401_envelope(acme, authorization):
    ApiKey.issue(acme)
    response = ApiClient(None).client.get("/api/v1/workspace", headers={"Authorization": authorization})
    assert response.status_code == 401
    body = response.json()
    assert body["error"]["type"] == "authentication_error"
    assert body["error"]["message"]


def test_expired_key_gets_401(acme):
    _, secret = ApiKey.issue(acme, expires_at=timezone.now() - timedelta(minutes=1))
    response = ApiClient(secret).get("/workspace")
    assert response.status_code == 401


def test_createapikey_prints_a_working_key(db):
    out, err = io.StringIO(), io.StringIO()
    call_command("createapikey", "Ops Team", "--create", stdout=out, stderr=err)
    secret = out.getvalue().strip().splitlines()[-1]
    assert secret.startswith("ph_")
    assert secret not in err.getvalue()
    response = ApiClient(secret).get("/workspace")
    assert response.status_code == 200
    assert response.json()["id"] == "ops-team"


def test_createapikey_refuses_unknown_workspace_without_create(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="pass --create"):
        call_command("createapikey", "nowhere")


@pytest.mark.worker
def test_celery_task_runs_in_real_worker_and_changes_the_database(transactional_db, celery_worker, acme):
    # lost as often as a run may be: this loss ends it (a run lost fewer times is continued: runs.handover)
    stale = make_run(
        acme,
        status=Run.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(hours=1),
        worker="gone@host",
        worker_losses=settings.RUN_MAX_RECOVERIES,
    )
    fresh = make_run(acme, status=Run.Status.RUNNING, heartbeat_at=timezone.now(), worker="alive@host")
    reap_stale_runs.delay()
    stale = wait_for(
        lambda: Run.objects.filter(pk=stale.pk, status=Run.Status.FAILED).first(), message="the stale run to be reaped"
    )
    assert stale.error_code == Run.ErrorCode.WORKER_LOST
    assert "stopped responding" in stale.error_message
    assert Event.objects.filter(run=stale, type="run.finished").exists()
    fresh.refresh_from_db()
    assert fresh.status == Run.Status.RUNNING


@pytest.mark.worker
def test_a_message_sent_under_a_tasks_former_name_is_still_run(transactional_db, celery_worker, acme):
    """A reaper message queued by the previous release (runs.tasks.*) before an upgrade is run by the new worker."""
    stale = make_run(
        acme,
        status=Run.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(hours=1),
        worker="gone@host",
        worker_losses=settings.RUN_MAX_RECOVERIES,
    )
    app.send_task("runs.tasks.reap_stale_runs")
    wait_for(
        lambda: Run.objects.filter(pk=stale.pk, status=Run.Status.FAILED).exists(),
        message="the stale run reaped under the former name",
    )


def test_api_key_is_rate_limited_with_retry_after(acme, settings):
    from django.core.cache import cache

    cache.clear()
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    client = ApiClient(ApiKey.issue(acme)[1])
    statuses = [client.get("/workspace").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = client.get("/workspace")
    assert response.json()["error"]["type"] == "rate_limited"
    assert int(response["Retry-After"]) >= 1
    other = ApiClient(ApiKey.issue(acme)[1])
    assert other.get("/workspace").status_code == 200, "the limit is per key"
    cache.clear()


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("runtime.tasks.execute_run", "runs"),
        ("runtime.tasks.reap_stale_runs", "runs"),
        ("runs.tasks.execute_run", "runs"),  # the former name, for one release
        ("judge.tasks.judge_run", "judge"),
        ("browsers.tasks.run_session", "browsers"),
    ],
)
def test_each_task_is_sent_to_the_queue_its_workers_read(task, queue):
    """A task renamed without its route would go to Celery's default queue, which no run worker reads."""
    assert app.amqp.router.route({}, task)["queue"].name == queue
