"""Where a worker's CDP relay listens, and so where the web tier connects: BROWSER_RELAY_HOST, or the address the
worker reaches Redis from. The address of a worker machine on a network of its own is checked across hosts by
tests/hosts/test_browser_sessions.py."""

from runtime.browser_sessions import relay_host


def test_the_setting_decides_when_it_is_set(settings):
    settings.BROWSER_RELAY_HOST = "10.1.2.3"
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert relay_host() == "10.1.2.3"


def test_unset_it_is_loopback_when_redis_is_on_this_machine(settings):
    settings.BROWSER_RELAY_HOST = ""
    settings.REDIS_URL = "redis://:secret@127.0.0.1:6380/3"
    assert relay_host() == "127.0.0.1"


def test_unset_it_is_loopback_when_redis_is_a_unix_socket(settings):
    settings.BROWSER_RELAY_HOST = ""
    settings.REDIS_URL = "unix:///run/redis/redis.sock?db=0"
    assert relay_host() == "127.0.0.1"
