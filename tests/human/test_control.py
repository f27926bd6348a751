"""Taking control through a real worker, Daphne and real Chromium: a pause stops the agent's requests, a member's
clicks and typing over the live socket reach the agent's page, and resume's note (and a queued message) reach the
agent's next request."""

import time

import pytest

from runs.models import Event, Run
from tests import messages_stub as stub_fixtures
from tests.support import launching, live, workers
from tests.support.launching import events, finished, launch_through_api, wait_for
from tests.support.live import send_over_live_socket, slow
from tests.support.replies import browser, done, last_tool_result_text

messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub
runtime_worker = workers.runtime_worker
launches_held = launching.launches_held
asgi_server = live.asgi_server

pytestmark = [
    pytest.mark.worker,
    pytest.mark.browser,
    pytest.mark.usefixtures("runtime_worker", "transactional_db", "launches_held"),
]

# Where tests/pages/control.html puts its field and its button (CSS pixels of the viewport).
NAME_FIELD = {"x": 250, "y": 120}
GO_BUTTON = {"x": 200, "y": 225}


def user_text(request: dict) -> str:
    """The text blocks of the request's last user message (after its tool results)."""
    return "\n".join(block.get("text", "") for block in request["messages"][-1]["content"] if block["type"] == "text")


def test_a_pause_stops_requests_a_member_drives_the_page_and_the_note_reaches_the_next_request(
    api, asgi_server, site, alice, charlie, messages_stub, runtime_worker
):
    messages_stub.agent(slow(browser("get_page_text"), 2), browser("get_page_text"), done(True, "Done."))
    run = launch_through_api(api, start_url=f"{site}/control.html")
    wait_for(lambda: len(messages_stub.requests) == 1, timeout=60, message="the agent's first request")

    paused = api.post(f"/runs/{run.public_id}/pause")  # while the model answers: the turn still finishes

    assert paused.status_code == 200 and paused.json()["paused"] is True
    wait_for(lambda: Event.objects.filter(run=run, type="agent.tool_result").exists(), timeout=30, message="the turn")
    run.refresh_from_db()
    assert run.accepts_control
    # A stranger's socket is closed as if the run did not exist, and sends nothing.
    refused = send_over_live_socket(asgi_server, charlie, run.public_id, [{"kind": "text", "text": "intruder"}])
    assert {"type": "closed", "code": 4404} in refused
    replies = send_over_live_socket(
        asgi_server,
        alice,
        run.public_id,
        [
            {"kind": "mouse", "action": "click", **NAME_FIELD},
            {"kind": "text", "text": "hello person"},
            {"kind": "key", "key": "Enter"},
            {"kind": "wheel", "x": 10, "y": 10, "dx": 0, "dy": 40},
            {"kind": "mouse", "action": "move", **GO_BUTTON},
            {"kind": "mouse", "action": "click", **GO_BUTTON},
        ],
    )
    assert not [reply for reply in replies if reply["type"] == "input_refused"], replies
    # The worker answered each input, in order, as applied.
    acks = [reply for reply in replies if reply["type"] == "input_ack"]
    assert [(ack["id"], ack["ok"]) for ack in acks] == [(number, True) for number in range(1, 7)], replies
    time.sleep(1.0)
    assert len(messages_stub.requests) == 1, "a request was sent while the run was paused"

    resumed = api.post(f"/runs/{run.public_id}/resume", {"note": "I filled in the name and pressed Go."})

    assert resumed.status_code == 200 and resumed.json()["paused"] is False
    run = finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    requests = messages_stub.requests
    assert len(requests) == 3
    handback = user_text(requests[1])
    assert "A person (api key " in handback and "I filled in the name and pressed Go." in handback
    assert "entered hello person | clicked go" in last_tool_result_text(requests[2])
    kinds = [event.type for event in events(run)]
    assert kinds.count("run.paused") == 1 and kinds.count("run.resumed") == 1
    assert "agent.message_delivered" in kinds
    # What the person typed is on the page (the agent reads it there), never in the record of their control: no
    # event from the pause to the hand-back holds it, nor the worker's log.
    paused_seq = events(run, "run.paused")[0].seq
    resumed_seq = events(run, "run.resumed")[0].seq
    during = [event.payload for event in events(run) if paused_seq <= event.seq <= resumed_seq]
    assert "hello person" not in str(during)
    assert "hello person" not in runtime_worker.log_path.read_text(errors="replace")
    # Once handed back, the socket takes no more input.
    after = send_over_live_socket(asgi_server, alice, run.public_id, [{"kind": "text", "text": "late"}], settle_ms=300)
    assert {"type": "input_refused", "id": 1, "reason": "not_in_control"} in after


def test_a_queued_message_reaches_the_agents_next_request(api, site, messages_stub):
    messages_stub.agent(slow(browser("get_page_text"), 2), done(True, "Done."))
    run = launch_through_api(api, start_url=f"{site}/index.html")
    wait_for(lambda: len(messages_stub.requests) == 1, timeout=60, message="the agent's first request")

    queued = api.post(f"/runs/{run.public_id}/messages", {"text": "Only look at the first product."})

    assert queued.status_code == 202
    run = finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error_message
    second = messages_stub.requests[1]
    content = second["messages"][-1]["content"]
    assert content[0]["type"] == "tool_result"  # tool results first, then the message
    assert "[operator] A message from the operator (api key " in user_text(second)
    assert "Only look at the first product." in user_text(second)
    delivered = events(run, "agent.message_delivered")
    assert [event.payload["text"] for event in delivered] == ["Only look at the first product."]
    kinds = [event.type for event in events(run)]
    assert kinds.index("run.message_queued") < kinds.index("agent.message_delivered")
