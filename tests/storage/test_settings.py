"""STORAGE_URL and the AWS_* variables: what settings.py reads, what it refuses (every process stops, the workers too),
and what the start-up checks say about the S3 endpoint and credentials."""

import os
import re
import subprocess
import sys
import threading

import pytest
from django.core.checks import Error
from django.utils.module_loading import import_string

from agent_platform import checks
from agent_platform.object_storage import S3_BACKEND, Bucket, parse_storage_url, storages_setting
from tests.support.paths import REPO

SECRET = "storage-url-canary-secret"


@pytest.mark.parametrize(
    ("url", "bucket"),
    [
        ("", None),
        ("  ", None),
        ("s3://artifacts", Bucket("artifacts", "")),
        ("s3://artifacts/", Bucket("artifacts", "")),
        ("s3://my.artifacts-1/pilothouse/prod/", Bucket("my.artifacts-1", "pilothouse/prod")),
    ],
)
def test_a_storage_url_names_a_bucket_and_prefix_or_the_filesystem(url, bucket):
    assert parse_storage_url(url) == bucket


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("https://artifacts/x", "s3://bucket/prefix"),
        ("file:///var/media", "s3://bucket/prefix"),
        ("s3://", "names no bucket"),
        ("s3:///prefix", "names no bucket"),
        ("s3://artifacts:9000/x", "AWS_ENDPOINT_URL"),
        ("s3://Artifacts/x", "which S3 does not allow"),
        ("s3://ab/x", "which S3 does not allow"),
        ("s3://artifacts/x/../y", "'..'"),
        ("s3://artifacts/x?region=eu-west-1", "no query"),
        (f"s3://AKIAEXAMPLE:{SECRET}@artifacts/x", "AWS_ACCESS_KEY_ID"),
        (f"https://user:{SECRET}@example.com/x", "carries credentials"),
    ],
)
def test_a_malformed_storage_url_is_refused_and_says_why(url, says):
    with pytest.raises(ValueError, match=re.escape(says)) as refused:
        parse_storage_url(url)
    assert SECRET not in str(refused.value)


def test_the_embedded_default_keeps_files_on_the_filesystem_and_static_files_where_they_were(settings):
    assert storages_setting(None)["default"] == {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    assert settings.STORAGES["default"]["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    bucket = storages_setting(Bucket("artifacts", "p"), {"AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "x"})
    assert bucket["staticfiles"] == storages_setting(None)["staticfiles"]
    options = bucket["default"]["OPTIONS"]
    assert (options["bucket_name"], options["location"], options["region_name"]) == ("artifacts", "p", "eu-west-1")
    assert options["endpoint_url"] is None  # AWS itself
    assert not any("key" in name for name in options)  # credentials are never a setting


def test_the_endpoint_is_read_from_the_first_variable_set():
    environ = {"AWS_ENDPOINT_URL": "http://general:1", "AWS_ENDPOINT_URL_S3": "http://s3-only:2"}
    assert (
        storages_setting(Bucket("artifacts", ""), environ)["default"]["OPTIONS"]["endpoint_url"] == "http://s3-only:2"
    )
    environ["AWS_S3_ENDPOINT_URL"] = "http://storages:3"
    assert (
        storages_setting(Bucket("artifacts", ""), environ)["default"]["OPTIONS"]["endpoint_url"] == "http://storages:3"
    )


def test_a_process_started_with_a_malformed_storage_url_stops_with_the_reason_and_no_secret():
    env = dict(os.environ, STORAGE_URL=f"s3://AKIAEXAMPLE:{SECRET}@artifacts/x")
    started = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert started.returncode != 0
    assert "STORAGE_URL must be empty (files under MEDIA_ROOT) or s3://bucket" in started.stderr
    assert SECRET not in started.stdout + started.stderr


@pytest.fixture
def on_a_bucket(settings, monkeypatch, tmp_path):
    """S3 storage, and an environment with no AWS variable and no shared credentials or config file."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    settings.STORAGES = storages_setting(Bucket("artifacts", "p"))
    assert settings.STORAGES["default"]["BACKEND"] == S3_BACKEND
    return monkeypatch


def ids(messages):
    return [message.id for message in messages]


def test_a_bucket_without_credentials_is_an_error_at_start_up(on_a_bucket):
    messages = checks.check_object_storage()
    assert ids(messages) == ["pilothouse.E008"]
    assert (
        isinstance(messages[0], Error) and "'artifacts'" in messages[0].msg and "AWS_ACCESS_KEY_ID" in messages[0].hint
    )


def test_half_a_key_pair_is_an_error_that_names_the_missing_half(on_a_bucket):
    on_a_bucket.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    messages = checks.check_object_storage()
    assert ids(messages) == ["pilothouse.E008"]
    assert "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not" in messages[0].msg


@pytest.mark.parametrize(
    "variables",
    [
        {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": SECRET},
        {"AWS_S3_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_S3_SECRET_ACCESS_KEY": SECRET},
        {"AWS_PROFILE": "artifacts"},  # from the shared credentials file, through boto's own chain
        {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/x"},
        {"AWS_EC2_METADATA_DISABLED": "false"},  # an instance role, said out loud: the check asks no network
    ],
)
def test_credentials_from_any_source_boto_reads_pass(on_a_bucket, tmp_path, variables):
    (tmp_path / "credentials").write_text(
        f"[artifacts]\naws_access_key_id = AKIAEXAMPLE\naws_secret_access_key = {SECRET}\n"
    )
    for name, value in variables.items():
        on_a_bucket.setenv(name, value)
    assert checks.check_object_storage() == []


@pytest.mark.parametrize("endpoint", ["ftp://s3.internal", "s3.internal:9000", "http://", "http://host:port"])
def test_an_endpoint_that_is_not_an_http_url_is_an_error(on_a_bucket, settings, endpoint):
    on_a_bucket.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    on_a_bucket.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    settings.STORAGES["default"]["OPTIONS"]["endpoint_url"] = endpoint
    assert ids(checks.check_object_storage()) == ["pilothouse.E009"]


def test_an_endpoint_with_credentials_in_it_is_an_error_that_does_not_repeat_them(on_a_bucket, settings):
    on_a_bucket.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    on_a_bucket.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    settings.STORAGES["default"]["OPTIONS"]["endpoint_url"] = f"https://AKIAEXAMPLE:{SECRET}@s3.internal"
    messages = checks.check_object_storage()
    assert ids(messages) == ["pilothouse.E009"]
    assert SECRET not in messages[0].msg + messages[0].hint


def test_every_thread_gets_its_own_s3_resource_from_the_one_session_of_the_process(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    setting = storages_setting(Bucket("artifacts", "p"), {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})["default"]
    storage = import_string(setting["BACKEND"])(**setting["OPTIONS"])
    seen: list = []

    def use() -> None:
        seen.append((storage._create_session(), storage.connection))

    threads = [threading.Thread(target=use) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    sessions, resources = zip(*seen, strict=True)
    assert len(seen) == 3 and len({id(session) for session in sessions}) == 1
    assert len({id(resource) for resource in resources}) == 3
    assert resources[0].meta.client.meta.endpoint_url == "http://127.0.0.1:9"


@pytest.mark.worker
def test_a_worker_whose_bucket_has_no_credentials_does_not_start(on_a_bucket, tmp_path):
    """Celery runs none of Django's checks: the worker runs the storage check itself, before it takes a run."""
    env = dict(os.environ, STORAGE_URL="s3://artifacts/p", DJANGO_SETTINGS_MODULE="agent_platform.settings")
    started = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "agent_platform", "worker", "-Q", f"nothing-{tmp_path.name}",
         "--pool", "threads", "--without-mingle", "--without-gossip"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert started.returncode != 0
    assert "The worker does not start" in started.stdout + started.stderr
    assert "pilothouse.E008" in started.stdout + started.stderr
