"""Per-run secrets: the agent types placeholders, the page receives the values, and no event, response, page or
model request ever holds them."""

import base64
import random
import re
import struct
import zlib

import pytest

from runs.models import Run
from runs.secret_box import unseal
from runs.secrets import mask
from tests import messages_stub as stub_fixtures
from tests.support import sites, workers
from tests.support.canaries import dumped
from tests.support.clients import ApiClient
from tests.support.launching import events, finished
from tests.support.replies import browser, done, on_field
from tests.support.sites import site_url
from tests.support.workers import FAULT_QUEUE

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_worker = workers.fault_worker
fault_site = sites.fault_site

USER = "canary-user-7b1d"
PASSWORD = "canary-pass-4e9a"


@pytest.fixture
def runs_on_the_fault_worker(monkeypatch):
    """Launches go to the fault worker's queue (the launch path itself is unchanged)."""
    from runs import tasks

    monkeypatch.setattr(
        tasks.execute_run, "delay", lambda pk, **_fair: tasks.execute_run.apply_async(args=[pk], queue=FAULT_QUEUE)
    )


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("fault_worker", "transactional_db", "runs_on_the_fault_worker")
def test_secrets_reach_the_page_and_nowhere_else(acme, acme_key, alice_client, fault_site, messages_stub):
    messages_stub.agent(
        browser("read_page", filter="interactive"),
        on_field("textbox", "Username", lambda target: browser("left_click", target=target)),
        browser("type", text="{{secret:SHOP_USER}}"),
        browser("read_page", filter="interactive"),
        on_field("textbox", "Password", lambda target: browser("form_input", target=target, value="{{secret:SHOP_PASSWORD}}")),
        browser("key", text="Return"),
        browser("get_page_text"),
        done(True, "Signed in as {{secret:SHOP_USER}}."),
    )  # fmt: skip
    api = ApiClient(acme_key)
    earlier = len(fault_site.seen())  # the site is the session's: other tests' runs post to it too
    launched = api.post(
        "/runs",
        {
            "task": "Sign in to the shop.",
            "start_url": f"{site_url(fault_site)}/login.html",
            "secrets": {"SHOP_USER": USER, "SHOP_PASSWORD": PASSWORD},
        },
    )
    assert launched.status_code == 201, launched.content
    run = finished(Run.objects.get(public_id=launched.json()["id"]))

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    # The page's server received the real values…
    posted = [body for method, _, path, body in fault_site.seen()[earlier:] if method == "POST" and path == "/login"]
    assert posted == [f"username={USER}&password={PASSWORD}"]
    # …which the page echoed back; the agent and the record see the placeholders instead.
    page_text = events(run, "agent.tool_result")[-2].payload["content"]
    assert "your password is {{secret:SHOP_PASSWORD}}" in page_text
    assert "Welcome {{secret:SHOP_USER}}" in page_text
    system = messages_stub.requests[0]["system"][0]["text"]
    assert "{{secret:SHOP_PASSWORD}}" in system and "{{secret:SHOP_USER}}" in system

    exposed = {
        "events": dumped([event.as_dict() for event in events(run)]),
        "model requests": dumped(messages_stub.requests),
        "launch response": launched.content.decode(),
        "run response": api.get(f"/runs/{run.public_id}").content.decode(),
        "events response": api.get(f"/runs/{run.public_id}/events?limit=1000").content.decode(),
        "runs list response": api.get("/runs").content.decode(),
        "run page": alice_client.get(f"/runs/{run.public_id}/").content.decode(),
        "runs list page": alice_client.get("/").content.decode(),
        "worker log": workers._shared["fault"].log_path.read_text(errors="replace"),
    }
    for where, text in exposed.items():
        assert USER not in text and PASSWORD not in text, f"a secret value appears in the {where}"
    assert "{{secret:SHOP_PASSWORD}}" in exposed["events response"]
    run.refresh_from_db()
    assert run.secrets == {}, "a finished run keeps no secrets"


@pytest.mark.parametrize(
    "secrets, field",
    [
        ({"lower": "long-enough"}, "secrets"),
        ({"PIN": "123"}, "secrets.PIN"),
        ({"TOKEN": 42}, "secrets.TOKEN"),
        ({f"S{index}": "long-enough" for index in range(21)}, "secrets"),
    ],
)
def test_unusable_secrets_are_refused_without_echoing_them(api, secrets, field):
    response = api.post("/runs", {"task": "Sign in.", "secrets": secrets})
    assert response.status_code == 400
    body = response.json()
    assert body["error"]["type"] == "invalid_request"
    assert field in body["error"]["message"] or any(field in str(item) for item in body["error"]["detail"] or [])
    assert "long-enough" not in response.content.decode() and "123" not in response.content.decode()


def test_the_launch_form_takes_secrets_as_lines(alice_client, acme, django_capture_on_commit_callbacks):
    response = alice_client.post("/runs/new/", {"task": "Sign in.", "secrets": "SHOP_PASSWORD = pa55-word\n\n"})
    assert response.status_code == 302
    run = Run.objects.get(workspace=acme)
    assert unseal(run.secrets) == {"SHOP_PASSWORD": "pa55-word"}  # stored sealed (runs.secret_box)
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "pa55-word" not in page


def test_a_refused_launch_form_does_not_echo_its_secrets(alice_client, acme):
    response = alice_client.post("/runs/new/", {"task": "", "secrets": "SHOP_PASSWORD=pa55-word"})
    assert response.status_code == 400
    page = response.content.decode()
    assert 'name="secrets"' in page and "pa55-word" not in page


def noisy_png(seed: int, width: int = 16, height: int = 16) -> bytes:
    """A valid PNG of pseudo-random pixels: its base64 varies with the seed, as screenshots of pages do."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pixels = random.Random(seed).randbytes(width * height * 3)
    raw = b"".join(b"\x00" + pixels[row * width * 3 : (row + 1) * width * 3] for row in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def png_whose_base64_holds_four_digits() -> tuple[bytes, str, str]:
    """A real PNG whose base64 happens to contain a 4-digit run, as about 1 viewport screenshot in 25 does."""
    for seed in range(1000):
        png = noisy_png(seed)
        data = base64.b64encode(png).decode()
        found = re.search(r"\d{4}", data)
        if found:
            return png, data, found.group(0)
    raise AssertionError("no PNG with four digits in its base64")


def test_a_pin_secret_leaves_screenshots_byte_identical_and_masks_only_text():
    png, data, pin = png_whose_base64_holds_four_digits()
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "toolset_name": "browser",
        "content": [
            {"type": "text", "text": f"Your code {pin} was accepted."},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            {"type": "browser_state", "tabs": [{"url": f"https://bank.test/?pin={pin}", "title": f"PIN {pin}"}]},
        ],
    }
    payload = {"headers": {pin: f"code {pin}"}, "screenshot": {"type": "base64", "data": data}}

    masked = mask(result, {"PIN": pin})
    masked_payload = mask(payload, {"PIN": pin})

    text, image, state = masked["content"]
    assert base64.b64decode(image["source"]["data"]) == png  # byte-identical
    assert text["text"] == "Your code {{secret:PIN}} was accepted."
    assert state["tabs"] == [{"url": "https://bank.test/?pin={{secret:PIN}}", "title": "PIN {{secret:PIN}}"}]
    assert masked_payload["headers"] == {pin: "code {{secret:PIN}}"}  # keys are never rewritten
    assert masked_payload["screenshot"]["data"] == data
