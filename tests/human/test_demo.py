"""The scripted demo model's task that waits for a person: it asks the operator for a confirmation code (a secret),
then sends the contact form quoting the placeholder it was given; without an answer it says so."""

from runs.presets import CONFIRMATION_CODE, demo_tasks
from scripted_api.demo import DONE_TOOL
from tests.support.demo_conversation import CONTACT_SNAPSHOT, THANKS_PAGE_TEXT, Conversation

TASK = f"{CONFIRMATION_CODE}\nStart URL: http://127.0.0.1:8123/demo/contact/"


def test_the_demo_asks_for_the_code_then_sends_the_form_quoting_its_placeholder():
    conversation = Conversation(TASK)

    ask = conversation.next_call()
    assert ask["name"] == "ask_human" and ask["input"]["secret"] is True
    conversation.answer(
        ask, "The operator answered with a secret. Type it as {{secret:ANSWER_1}} (type or form_input)."
    )
    navigate = conversation.next_call()
    assert navigate["input"] == {"url": "http://127.0.0.1:8123/demo/contact/"}
    conversation.answer(navigate, "Navigated.")
    conversation.answer(conversation.next_call(), CONTACT_SNAPSHOT)
    values = []
    for _ in range(6):
        call = conversation.next_call()
        values.append(call["input"].get("value"))
        conversation.answer(call, "")
    assert "confirmation code {{secret:ANSWER_1}}" in values[3]
    conversation.answer(conversation.next_call(), THANKS_PAGE_TEXT)
    done = conversation.next_call()
    assert done["name"] == DONE_TOOL and done["input"]["success"] is True


def test_without_an_answer_the_demo_reports_it_did_not_contact_the_shop():
    conversation = Conversation(TASK)

    ask = conversation.next_call()
    conversation.answer(ask, "No one answered within 900 s. Continue without the answer if you can.")
    done = conversation.next_call()

    assert done["name"] == DONE_TOOL and done["input"]["success"] is False
    assert "confirmation code" in done["input"]["output"]


def test_the_launch_form_offers_the_task_that_waits_for_a_person():
    labels = [task["label"] for task in demo_tasks("http://127.0.0.1:8123/")]
    assert "Demo shop: ask me for a code" in labels
