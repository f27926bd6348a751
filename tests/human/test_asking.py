"""ask_human through a real worker, real Chromium and the strict stub: the operator answers through the API and the
agent's next request carries the answer; a secret answer is typed into the page and appears nowhere else."""

import re
import zipfile

import pytest

from runs.models import Event, Run
from scripted_api.wire import tool_use_reply
from tests import messages_stub as stub_fixtures
from tests.support import launching, sites, workers
from tests.support.canaries import dumped
from tests.support.clients import ApiClient
from tests.support.launching import events, finished, launch_through_api, wait_for
from tests.support.replies import browser, done, last_tool_result_text
from tests.support.sites import site_url

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker
launches_held = launching.launches_held
fault_site = sites.fault_site

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("runtime_worker", "transactional_db", "launches_held"),
]

CODE = "canary-code-5c3f81"


def ask_human(question: str, *, secret: bool = False) -> dict:
    return tool_use_reply("ask_human", {"question": question, "secret": secret})


def pending(api: ApiClient, run: Run) -> dict:
    def shown() -> dict | None:
        return api.get(f"/runs/{run.public_id}").json()["pending_input"]

    return wait_for(shown, timeout=60, interval=0.2, message="the agent's question")


def test_the_operators_answer_is_the_tool_result_of_the_agents_next_request(api, site, messages_stub):
    messages_stub.agent(ask_human("Which colour should I pick?"), done(True, "Picked blue."))
    run = launch_through_api(api, start_url=f"{site}/index.html")

    question = pending(api, run)
    assert question["question"] == "Which colour should I pick?" and question["secret"] is False
    assert len(messages_stub.requests) == 1  # the agent waits: no request while no one answered
    answered = api.post(f"/runs/{run.public_id}/input", {"id": question["id"], "text": "Blue, please."})
    assert answered.status_code == 200, answered.content
    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    requests = messages_stub.requests
    assert len(requests) == 2
    assert "ask_human" in [tool.get("name") for tool in requests[0]["tools"]]
    assert last_tool_result_text(requests[1]) == "The operator answered:\nBlue, please."
    assert run.signals["turns"] == 0  # asking is no action turn: the budget did not move
    kinds = [event.type for event in events(run)]
    assert kinds.index("agent.tool_use") < kinds.index("run.input_requested") < kinds.index("run.input_received")
    assert kinds.index("run.input_received") < kinds.index("agent.tool_result")
    again = api.post(f"/runs/{run.public_id}/input", {"id": question["id"], "text": "Red."})
    assert again.status_code == 409


def test_a_secret_answer_is_typed_into_the_page_and_appears_in_no_event_log_trace_request_or_response(
    api, alice_client, fault_site, messages_stub, runtime_worker
):
    def fill_password(request: dict) -> dict:
        text = last_tool_result_text(request)
        ref = re.search(r'textbox "Password"[^\n]*\[ref=(\w+)\]', text).group(1)
        placeholder = re.search(r"\{\{secret:(ANSWER_\d+)\}\}", dumped(request["messages"])).group(0)
        return browser("form_input", target={"type": "ref", "ref": ref}, value=placeholder)

    messages_stub.agent(
        ask_human("Your sign-in password, please.", secret=True),
        browser("read_page", filter="interactive"),
        fill_password,
        browser("key", text="Return"),
        browser("get_page_text"),
        done(True, "Signed in."),
    )
    run = launch_through_api(api, start_url=f"{site_url(fault_site, '127.0.0.1')}/login.html")

    question = pending(api, run)
    assert question["secret"] is True
    answered = api.post(f"/runs/{run.public_id}/input", {"id": question["id"], "text": CODE})
    assert answered.status_code == 200
    run = finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error_message
    # The page's server received the value…
    posted = [body for method, _, path, body in fault_site.seen() if method == "POST" and path == "/login"]
    assert posted and posted[-1].endswith(f"password={CODE}")
    # …the agent was told only its placeholder, and saw the page's echo of it masked.
    assert "{{secret:ANSWER_1}}" in last_tool_result_text(messages_stub.requests[1])
    assert "your password is {{secret:ANSWER_1}}" in last_tool_result_text(messages_stub.requests[5])
    received = Event.objects.get(run=run, type="run.input_received").payload
    assert "text" not in received
    trace_text = ""
    trace = runtime_worker.media_root / "traces" / run.public_id / "trace.zip"
    assert trace.exists()
    with zipfile.ZipFile(trace) as archive:
        trace_text = "".join(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())
    exposed = {
        "events": dumped([event.as_dict() for event in events(run)]),
        "model requests": dumped(messages_stub.requests),
        "run response": api.get(f"/runs/{run.public_id}").content.decode(),
        "events response": api.get(f"/runs/{run.public_id}/events?limit=1000").content.decode(),
        "run page": alice_client.get(f"/runs/{run.public_id}/").content.decode(),
        "worker log": runtime_worker.log_path.read_text(errors="replace"),
        "trace": trace_text,
    }
    for where, text in exposed.items():
        assert CODE not in text, f"the secret answer appears in the {where}"
    assert "{{secret:ANSWER_1}}" in trace_text
    assert run.inputs.get().answer == "", "a finished run keeps no secret answer"
