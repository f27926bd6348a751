"""The settings' system checks (agent_platform.checks): quiet with the defaults, and each contradiction named."""

import pytest
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.checks import Error, Warning, run_checks
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from agent_platform import checks
from agent_platform.settings import envint
from runs import checks as runs_checks
from runs.launch_rules import MAX_TURNS_LIMIT


def ids(messages):
    return [message.id for message in messages]


def test_the_defaults_pass_every_check():
    assert [message for message in run_checks() if message.id and message.id.startswith("pilothouse.")] == []


@pytest.mark.parametrize(
    ("setting", "check_id"), [("DEFAULT_MODEL", "pilothouse.E001"), ("JUDGE_MODEL", "pilothouse.E002")]
)
@pytest.mark.parametrize("empty", ["", "   "])
def test_an_empty_model_is_an_error(setting, check_id, empty):
    with override_settings(**{setting: empty}):
        messages = checks.check_models()
    assert ids(messages) == [check_id]
    assert isinstance(messages[0], Error) and messages[0].hint


@pytest.mark.parametrize("turns", [1, 30, MAX_TURNS_LIMIT])
def test_default_turns_within_the_launch_limit_pass(turns):
    with override_settings(RUN_DEFAULT_MAX_TURNS=turns):
        assert runs_checks.check_run_limits() == []


@pytest.mark.parametrize("turns", [0, -3, MAX_TURNS_LIMIT + 1])
def test_default_turns_outside_the_launch_limit_are_an_error(turns):
    with override_settings(RUN_DEFAULT_MAX_TURNS=turns):
        messages = runs_checks.check_run_limits()
    assert ids(messages) == ["pilothouse.E003"]
    assert str(MAX_TURNS_LIMIT) in messages[0].msg


def test_redelivery_after_a_queued_run_counts_as_orphaned_is_a_warning():
    with override_settings(RUN_TIME_LIMIT_SECONDS=100, RUN_QUEUED_REDELIVER_SECONDS=200):
        messages = runs_checks.check_run_limits()
    assert ids(messages) == ["pilothouse.W001"]
    assert isinstance(messages[0], Warning)
    with override_settings(RUN_TIME_LIMIT_SECONDS=100, RUN_QUEUED_REDELIVER_SECONDS=199):
        assert runs_checks.check_run_limits() == []


def test_fernet_keys_pass():
    with override_settings(SECRETS_KEYS=[Fernet.generate_key().decode(), Fernet.generate_key().decode()]):
        assert checks.check_secrets_keys() == []


def test_a_key_that_is_not_fernet_is_an_error_naming_its_position():
    with override_settings(SECRETS_KEYS=[Fernet.generate_key().decode(), "not-a-key", "c2hvcnQ="]):
        messages = checks.check_secrets_keys()
    assert ids(messages) == ["pilothouse.E005", "pilothouse.E005"]
    assert "entry 2" in messages[0].msg and "entry 3" in messages[1].msg
    assert "not-a-key" not in messages[0].msg  # a key is a secret: never echoed


def test_no_secrets_key_at_all_is_an_error():
    with override_settings(SECRETS_KEYS=[]):
        assert ids(checks.check_secrets_keys()) == ["pilothouse.E004"]


@override_settings(DEMO_BASE_URL="http://127.0.0.1:8001/")
@pytest.mark.parametrize(
    "hosts",
    [
        ["127.0.0.1:8001"],
        ["localhost:8001", "127.0.0.0/8"],
        ["[::1]:8001", "127.0.0.1"],
        ["10.1.0.0/16:443", "127.0.0.1:8001"],
    ],
)
def test_allowed_private_hosts_that_parse_and_open_the_demo_pass(hosts):
    with override_settings(BROWSER_ALLOWED_PRIVATE_HOSTS=hosts):
        assert checks.check_browser_allowed_private_hosts() == []


@pytest.mark.parametrize("entry", ["a b", "10.0.0.0/99", "host:0", "host:http", "[::1]x", ":8001"])
def test_an_allowed_private_host_that_does_not_parse_is_an_error(entry):
    with override_settings(BROWSER_ALLOWED_PRIVATE_HOSTS=["127.0.0.1:8001", entry]):
        messages = checks.check_browser_allowed_private_hosts()
    assert ids(messages) == ["pilothouse.E006"]
    assert repr(entry.strip().lower()) in messages[0].msg or repr(entry) in messages[0].msg


@pytest.mark.parametrize(
    ("demo", "hosts"),
    [
        ("http://127.0.0.1:9000/", ["127.0.0.1:8001"]),
        ("http://localhost:8001/", ["127.0.0.1:8001"]),
        ("http://10.0.0.5/", ["10.0.0.0/8:443"]),
        ("http://127.0.0.1:8001/", []),
    ],
)
def test_a_private_demo_site_the_browser_may_not_reach_is_a_warning(demo, hosts):
    with override_settings(DEMO_BASE_URL=demo, BROWSER_ALLOWED_PRIVATE_HOSTS=hosts):
        messages = checks.check_browser_allowed_private_hosts()
    assert ids(messages) == ["pilothouse.W002"]


def test_a_public_demo_site_needs_no_allowance():
    with override_settings(DEMO_BASE_URL="https://demo.example.com/", BROWSER_ALLOWED_PRIVATE_HOSTS=[]):
        assert checks.check_browser_allowed_private_hosts() == []


def test_a_webhook_retry_as_long_as_the_visibility_timeout_is_an_error():
    with override_settings(
        CELERY_BROKER_TRANSPORT_OPTIONS={"visibility_timeout": 2400},
        WEBHOOK_RETRY_BASE_SECONDS=30,
        WEBHOOK_RETRY_MAX_SECONDS=2400,
        WEBHOOK_RETRY_WINDOW_SECONDS=86400,
    ):
        messages = checks.check_webhook_retries()
    assert ids(messages) == ["pilothouse.E007"]
    with override_settings(
        CELERY_BROKER_TRANSPORT_OPTIONS={"visibility_timeout": 2401}, WEBHOOK_RETRY_MAX_SECONDS=2400
    ):
        assert checks.check_webhook_retries() == []


def test_a_retry_base_above_its_maximum_is_a_warning():
    with override_settings(WEBHOOK_RETRY_BASE_SECONDS=600, WEBHOOK_RETRY_MAX_SECONDS=300):
        assert ids(checks.check_webhook_retries()) == ["pilothouse.W003"]


def test_a_retry_window_shorter_than_the_first_wait_is_a_warning():
    with override_settings(
        WEBHOOK_RETRY_BASE_SECONDS=60, WEBHOOK_RETRY_MAX_SECONDS=1800, WEBHOOK_RETRY_WINDOW_SECONDS=59
    ):
        assert ids(checks.check_webhook_retries()) == ["pilothouse.W004"]
    with override_settings(
        WEBHOOK_RETRY_BASE_SECONDS=60, WEBHOOK_RETRY_MAX_SECONDS=1800, WEBHOOK_RETRY_WINDOW_SECONDS=60
    ):
        assert checks.check_webhook_retries() == []


def test_the_checks_are_registered_with_django():
    with override_settings(RUN_DEFAULT_MAX_TURNS=MAX_TURNS_LIMIT + 1):
        assert "pilothouse.E003" in ids(run_checks())


def test_envint_refuses_a_value_above_its_maximum(monkeypatch):
    monkeypatch.setenv("PILOTHOUSE_TEST_QUALITY", "101")
    with pytest.raises(ImproperlyConfigured, match="above the maximum of 100"):
        envint("PILOTHOUSE_TEST_QUALITY", 70, minimum=0, maximum=100)
    monkeypatch.setenv("PILOTHOUSE_TEST_QUALITY", "100")
    assert envint("PILOTHOUSE_TEST_QUALITY", 70, minimum=0, maximum=100) == 100


def test_the_broker_visibility_timeout_follows_the_run_time_limit():
    assert settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] == settings.RUN_TIME_LIMIT_SECONDS + 600
