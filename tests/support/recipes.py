"""The demo's contact form done by a scripted agent, for recipes made from it: the agent's replies (the form read,
filled and sent in one action turn, then done with the thanks page's data) and the data's schema."""

from typing import Any

from scripted_api.wire import multi_tool_use_reply, tool_use_block
from tests.support.replies import last_tool_result_text, ref_of

CONTACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
    "required": ["name", "email"],
}


def contact_url(demo_base_url: str) -> str:
    return f"{demo_base_url}demo/contact/"


def contact_task(name: str, email: str) -> str:
    return f"Send the shop a contact message as {name} <{email}> about an order, and report the name and email."


def read_form() -> dict:
    return multi_tool_use_reply([tool_use_block("read_page", {"filter": "interactive"}, toolset_name="browser")])


def fill_and_send(name: str, email: str, *, button: str = "Send message"):
    """A reply that fills the form the agent read last (its refs from read_page) and sends it, in one turn."""

    def reply(request: dict) -> dict:
        snapshot = last_tool_result_text(request)

        def field(role: str, label: str, value: str) -> dict:
            target = {"type": "ref", "ref": ref_of(snapshot, role, label)}
            return tool_use_block("form_input", {"target": target, "value": value}, toolset_name="browser")

        click = {"target": {"type": "ref", "ref": ref_of(snapshot, "button", button)}}
        return multi_tool_use_reply(
            [
                field("textbox", "Your name", name),
                field("textbox", "Email address", email),
                field("combobox", "Topic", "order"),
                field("textbox", "Message", "Where is my order?"),
                tool_use_block("left_click", click, toolset_name="browser"),
            ]
        )

    return reply


def click_button(button: str):
    """A reply that clicks the button named `button` on the page the agent read last."""

    def reply(request: dict) -> dict:
        target = {"type": "ref", "ref": ref_of(last_tool_result_text(request), "button", button)}
        return multi_tool_use_reply([tool_use_block("left_click", {"target": target}, toolset_name="browser")])

    return reply


def done_with(name: str, email: str) -> dict:
    block = tool_use_block(
        "done", {"success": True, "output": f"Sent as {name}.", "data": {"name": name, "email": email}}
    )
    return multi_tool_use_reply([block])


def replay_through_api(api, **body: Any):
    """POST /api/v1/runs with recipe_id (and no task: a replay's is its recipe's), the run handed to the runtime
    tests' worker (with `launches_held`)."""
    from runs.models import Run
    from tests.support.launching import enqueue

    launched = api.post("/runs", body)
    assert launched.status_code == 201, launched.content
    return enqueue(Run.objects.get(public_id=launched.json()["id"]))


def play_contact_run(workspace, *, name: str = "Ada Lovelace", button: str = "Send message", coordinate: bool = False):
    """A succeeded run's events as the runtime writes them for the contact form: two fields set and the button
    clicked (each agent.tool_use, agent.target and agent.tool_result), then its final view. With `coordinate`, the
    click was on a point of the page (no target)."""
    from runs.events import emit
    from runs.lifecycle import finish, mark_started
    from tests.support.factories import make_run

    run = make_run(workspace, task=f"Send the contact form as {name}.", start_url="https://shop.example.com/contact/")
    mark_started(run, "tests")
    contact, thanks = "https://shop.example.com/contact/", "https://shop.example.com/contact/thanks/"
    actions = [
        ("form_input", {"target": {"type": "ref", "ref": "e14"}, "value": name}, ("textbox", "Your name"), contact),
        ("form_input", {"target": {"type": "ref", "ref": "e17"}, "value": "ada@example.com"}, ("textbox", "Email address"), contact),
        ("left_click", {"target": {"type": "ref", "ref": "e26"}}, ("button", button), thanks),
    ]  # fmt: skip
    for index, (member, member_input, (role, label), url) in enumerate(actions, start=1):
        use_id = f"toolu_{index}"
        emit(
            run,
            "agent.tool_use",
            {"id": use_id, "name": member, "toolset": "browser", "input": member_input, "turn": index},
        )
        target = (
            None if coordinate and member == "left_click" else {"role": role, "name": label, "nth": 0, "frame": None}
        )
        emit(
            run,
            "agent.target",
            {"tool_use_id": use_id, "member": member, "target": target, "url": url, "fingerprint": f"fp{index}"},
        )
        emit(
            run,
            "agent.tool_result",
            {"tool_use_id": use_id, "name": member, "content": "", "is_error": False, "turn": index},
        )
    emit(run, "agent.final_view", {"url": thanks, "title": "Thanks", "text": f"Thank you, {name}!"})
    finish(run, "succeeded", success=True, output=f"Sent as {name}.")
    run.refresh_from_db()
    return run
