"""Sign-in throttling (django-axes): wrong passwords lock the account and the address out with a clear 429 page,
a correct password included, and the admin lists the lock-outs."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"


@pytest.fixture
def operator(alice):
    alice.set_password(PASSWORD)
    alice.save()
    return alice


def sign_in(client: Client, username: str, password: str, address: str = "203.0.113.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_the_sixth_wrong_password_in_a_minute_is_throttled(operator):
    client = Client()
    wrong = [sign_in(client, operator.username, f"wrong-{n}") for n in range(5)]
    sixth = sign_in(client, operator.username, "wrong-6")
    right_one_now = sign_in(client, operator.username, PASSWORD)

    assert [response.status_code for response in wrong[:4]] == [200] * 4
    assert "did not match" in wrong[0].content.decode()
    assert sixth.status_code == 429
    page = sixth.content.decode()
    assert "Too many failed sign-ins" in page and "5 wrong passwords" in page
    assert right_one_now.status_code == 429  # locked: even the right password waits out the lock
    assert "_auth_user_id" not in client.session


def test_the_account_is_locked_from_every_address(operator):
    for n in range(6):
        sign_in(Client(), operator.username, f"wrong-{n}", address=f"198.51.100.{n + 1}")

    assert sign_in(Client(), operator.username, PASSWORD, address="192.0.2.99").status_code == 429


def test_one_address_trying_many_accounts_is_locked(operator):
    for n in range(6):
        sign_in(Client(), f"guess-{n}", "wrong", address="203.0.113.50")

    assert sign_in(Client(), operator.username, PASSWORD, address="203.0.113.50").status_code == 429
    ok = sign_in(Client(), operator.username, PASSWORD, address="203.0.113.51")
    assert ok.status_code == 302  # another address, an account with no failures of its own


def test_the_admin_lists_lock_outs(operator):
    for n in range(6):
        sign_in(Client(), operator.username, f"wrong-{n}")
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "root-password-123")
    client = Client()
    client.force_login(admin)

    page = client.get("/admin/axes/accessattempt/")

    assert page.status_code == 200
    assert operator.username in page.content.decode() and "203.0.113.7" in page.content.decode()


def test_a_good_sign_in_after_a_few_mistakes_works_and_resets_the_count(operator):
    client = Client()
    for n in range(4):
        sign_in(client, operator.username, f"wrong-{n}")
    assert sign_in(client, operator.username, PASSWORD).status_code == 302
    for n in range(4):
        assert sign_in(Client(), operator.username, f"again-{n}").status_code == 200
