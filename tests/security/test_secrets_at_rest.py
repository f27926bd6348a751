"""Run secrets at rest: a database dump taken while the run is running holds no secret value, the worker still types
the real value into the page, and a key rotation keeps old sealed secrets readable."""

import re

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from runs import human
from runs.models import Run
from runs.secret_box import SEALED, SecretsUnavailable, seal, unseal
from tests import messages_stub as stub_fixtures
from tests.support import sites, workers
from tests.support.canaries import database_dump
from tests.support.clients import ApiClient
from tests.support.launching import finished, wait_for
from tests.support.replies import browser, done, last_tool_result_text
from tests.support.sites import site_url
from tests.support.workers import FAULT_QUEUE

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
fault_worker = workers.fault_worker
fault_site = sites.fault_site

PASSWORD = "canary-at-rest-9f3c2e"


@pytest.mark.worker
@pytest.mark.browser
@pytest.mark.usefixtures("fault_worker", "transactional_db")
def test_a_dump_taken_mid_run_holds_no_secret_value(acme, acme_key, fault_site, messages_stub, monkeypatch):
    from runs import tasks

    monkeypatch.setattr(
        tasks.execute_run, "delay", lambda pk, **_fair: tasks.execute_run.apply_async(args=[pk], queue=FAULT_QUEUE)
    )

    def pause_then_fill_the_password(request: dict) -> dict:
        # The run holds here, paused and running, while the test takes its dump: a dump taken inside this answer would
        # keep the worker waiting on its model request past the fault worker's 2-second timeout on a loaded machine.
        human.pause(Run.objects.get(public_id=launched.json()["id"]), by="the test")
        connection.close()  # this thread's own connection: it must not outlive the test database
        ref = re.search(r'textbox "Password"[^\n]*\[ref=(\w+)\]', last_tool_result_text(request)).group(1)
        return browser("form_input", target={"type": "ref", "ref": ref}, value="{{secret:SHOP_PASSWORD}}")

    messages_stub.agent(
        browser("read_page", filter="interactive"),
        pause_then_fill_the_password,
        browser("key", text="Return"),
        done(True, "Signed in."),
    )
    launched = ApiClient(acme_key).post(
        "/runs",
        {
            "task": "Sign in to the shop.",
            "start_url": f"{site_url(fault_site)}/login.html",
            "secrets": {"SHOP_PASSWORD": PASSWORD},
        },
    )
    assert launched.status_code == 201, launched.content
    run = Run.objects.get(public_id=launched.json()["id"])
    wait_for(lambda: Run.objects.filter(pk=run.pk, paused_at__isnull=False).exists(), message="the run to pause")
    # the run is running and its secrets are in the worker's hands
    taken = {"dump": database_dump(), "status": Run.objects.get(pk=run.pk).status}
    human.resume(run, by="the test")
    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    assert taken["status"] == Run.Status.RUNNING
    assert launched.json()["id"] in taken["dump"]  # the dump does hold the run…
    assert f'{{"{SEALED}": "gAAAAA' in taken["dump"]  # …with its secrets as a Fernet token…
    assert PASSWORD not in taken["dump"]  # …and not their value
    # the worker opened them: the page's server received the real value
    assert any(PASSWORD in body for method, _, path, body in fault_site.seen() if method == "POST")
    with fault_site.lock:  # the site is shared by the session's tests: leave no sign-in of ours for theirs to count
        fault_site.requests[:] = [seen for seen in fault_site.requests if PASSWORD not in seen[3]]
    assert run.secrets == {}  # and cleared at the end, as before


def test_the_first_key_seals_and_every_listed_key_opens(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.SECRETS_KEYS = [old]
    sealed_under_old = seal({"SHOP_PASSWORD": PASSWORD})

    settings.SECRETS_KEYS = [new, old]  # rotation: the new key first, the old one kept while runs sealed under it live
    assert unseal(sealed_under_old) == {"SHOP_PASSWORD": PASSWORD}
    sealed_under_new = seal({"SHOP_PASSWORD": PASSWORD})

    settings.SECRETS_KEYS = [new]  # the old key dropped: what it sealed is unreadable, what the new one sealed is not
    assert unseal(sealed_under_new) == {"SHOP_PASSWORD": PASSWORD}
    with pytest.raises(SecretsUnavailable):
        unseal(sealed_under_old)
    assert PASSWORD not in str(sealed_under_new)
    assert seal({}) == {}
