"""The demo's profile tasks as `make run` plays them: the scripted model signs in to the demo shop with the run's
secrets and saves the profile, and the second task lands on the account page signed in with no sign-in step."""

import hashlib
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from agent_platform.models import Workspace
from runs.models import Run
from runs.presets import DEMO_PROFILE_NAME, SAMPLE_UPLOAD, UPLOAD_DOCUMENT, demo_tasks
from runs.profiles.models import Profile
from runs.secret_box import seal
from tests.support import demo
from tests.support.factories import make_run
from tests.support.launching import enqueue, events, finished
from tests.support.workers import WorkerProcess

demo_base_url = demo.demo_base_url
scripted_model = demo.scripted_model

QUEUE = "demo-profile-tests"

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


@pytest.fixture
def demo_worker(
    django_db_blocker, clean_broker, demo_base_url: str, scripted_model: str, tmp_path
) -> Iterator[WorkerProcess]:
    with demo.demo_worker(django_db_blocker, demo_base_url, scripted_model, tmp_path, QUEUE) as worker:
        yield worker


def preset(base_url: str, task_label: str) -> dict:
    return next(task for task in demo_tasks(base_url) if task["label"] == task_label)


def test_the_demo_signs_in_once_and_the_profile_lands_signed_in(acme, demo_base_url, demo_worker):
    base = demo_base_url.rstrip("/")
    sign_in = preset(base, "Demo shop: sign in, save to a profile")
    account = preset(base, "Demo shop: account via the profile")
    profile = Profile.objects.create(workspace=acme, name=DEMO_PROFILE_NAME)
    first = finished(
        enqueue(
            make_run(
                acme,
                task=sign_in["task"],
                start_url=sign_in["start_url"],
                secrets=seal(sign_in["secrets"]),
                profile=profile,
            ),
            queue=QUEUE,
        )
    )
    assert first.status == Run.Status.SUCCEEDED, first.error_message
    assert "I signed in with the run's secrets" in first.output and "Ada Lovelace" in first.output
    typed = [event.payload["input"].get("value") for event in events(first, "agent.tool_use")]
    assert "{{secret:SHOP_PASSWORD}}" in typed and "northwind-demo" not in str(typed)
    profile.refresh_from_db()
    assert profile.cookie_domains == ["127.0.0.1"]

    second = finished(
        enqueue(make_run(acme, task=account["task"], start_url=account["start_url"], profile=profile), queue=QUEUE)
    )
    assert second.status == Run.Status.SUCCEEDED, second.error_message
    assert second.output == "The browser was already signed in: the shop shows Ada Lovelace as signed in."
    page = events(second, "agent.tool_result")[1].payload["content"]  # get_page_text's, after the navigate
    assert "This browser remembers: Ada Lovelace" in page  # local storage came with the profile too
    assert [event.payload["name"] for event in events(second, "agent.tool_use")] == [
        "navigate",
        "get_page_text",
        "done",
    ]


def test_without_the_profile_the_account_page_says_no_one_is_signed_in(acme, demo_base_url, demo_worker):
    account = preset(demo_base_url.rstrip("/"), "Demo shop: account via the profile")
    run = finished(enqueue(make_run(acme, task=account["task"], start_url=account["start_url"]), queue=QUEUE))
    assert run.status == Run.Status.FAILED and run.success is False  # the agent's own verdict: not signed in
    assert "no one is signed in" in run.output


def test_seed_demo_creates_the_profile_and_launches_only_the_sign_in(acme: Workspace, monkeypatch):
    launched = []
    monkeypatch.setattr("runs.lifecycle.tasks.execute_run.delay", lambda pk, **_fair: launched.append(pk))
    acme.slug = "default"
    acme.save()

    call_command("seed_demo", base_url="http://127.0.0.1:9/")

    profile = Profile.objects.get(workspace=acme, name=DEMO_PROFILE_NAME)
    runs = Run.objects.filter(pk__in=launched)
    assert [run.profile_id for run in runs if run.profile_id] == [profile.pk]
    assert not runs.filter(task=preset("http://x", "Demo shop: account via the profile")["task"]).exists()


@pytest.mark.urls("demo_site.server_urls")
def test_the_demo_sign_in_sets_an_http_only_session_cookie_and_the_account_page_reads_it(client):
    assert "Sign in to your account" in client.get("/demo/account/sign-in/").text
    wrong = client.post("/demo/account/sign-in/", {"email": "ada@example.com", "password": "guess"})
    assert wrong.status_code == 400 and "do not match" in wrong.text
    assert "northwind_session" not in wrong.cookies
    assert "You are not signed in" in client.get("/demo/account/").text

    right = client.post("/demo/account/sign-in/", {"email": "ada@example.com", "password": "northwind-demo"})
    assert right.status_code == 200 and "Welcome back, Ada Lovelace" in right.text
    cookie = right.cookies["northwind_session"]
    assert cookie["httponly"] and "ada@example.com" in cookie.value  # signed, not encrypted: it is the demo's
    assert 'localStorage.setItem("northwind_customer"' in right.text
    assert "Signed in as Ada Lovelace (ada@example.com)." in client.get("/demo/account/").text

    signed_out = client.post("/demo/account/sign-out/")
    assert "You signed out" in signed_out.text
    assert "You are not signed in" in client.get("/demo/account/").text


@pytest.mark.urls("demo_site.server_urls")
def test_a_forged_session_cookie_signs_no_one_in(client):
    client.cookies["northwind_session"] = "ada@example.com"
    assert "You are not signed in" in client.get("/demo/account/").text


def test_seed_demo_gives_the_upload_run_the_bundled_sample(acme: Workspace, monkeypatch):
    """A first start shows no failed demo run: the upload task is seeded with a file of its own to upload."""
    monkeypatch.setattr("runs.lifecycle.tasks.execute_run.delay", lambda pk, **_fair: None)
    acme.slug = "default"
    acme.save()

    call_command("seed_demo", base_url="http://127.0.0.1:9/")

    upload = Run.objects.for_workspace(acme).get(task=UPLOAD_DOCUMENT)
    given = list(upload.given_files.all())
    assert [file.name for file in given] == [SAMPLE_UPLOAD.name]
    assert given[0].sha256 == hashlib.sha256(SAMPLE_UPLOAD.read_bytes()).hexdigest()
