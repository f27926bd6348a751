"""The agent's side of a person in the loop: the ask_human tool, what the agent is told of answers, pauses and
queued messages, and how the worker waits for a person without loading the database."""

from __future__ import annotations

import time
from typing import Any

from anthropic.types.beta import BetaToolParam

from agent_platform import db
from runs.human import wake_token

HUMAN_TOOL = "ask_human"
# How often a waiting run reads the wake token (one cache read), and how long it goes without reading the database
# when the token does not change (a cache that lost the token costs at most this much delay).
WAKE_POLL_SECONDS = 0.5
DATABASE_RECHECK_SECONDS = 5.0


def human_tool() -> BetaToolParam:
    """The custom tool beside the browser toolset, done and extract."""
    return {
        "name": HUMAN_TOOL,
        "description": (
            "Ask the operator (a person watching this run) a question and wait for the answer: for a code sent to "
            "them (2FA, a confirmation code), a choice only they can make, or information the task does not give. "
            "Use it only when you cannot go on without a person. With secret true (passwords, codes), the answer "
            "is given to you as a secret placeholder that you type like any run secret; you never see its value. "
            "The operator may not answer: then you are told so and continue as best you can."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "question": {"type": "string", "description": "The question, as the operator will read it."},
                "secret": {
                    "type": "boolean",
                    "description": "True when the answer is sensitive (a password, a one-time code): it is masked.",
                },
            },
            "required": ["question"],
        },
    }


def question_problem(member_input: Any, maximum: int) -> str | None:
    if not isinstance(member_input, dict):
        return "ask_human takes an object with question (a string) and secret (a boolean)."
    question = member_input.get("question")
    if not isinstance(question, str) or not question.strip():
        return "ask_human needs a question: a non-empty string."
    if len(question) > maximum:
        return f"The question has {len(question)} characters; at most {maximum} are allowed."
    if not isinstance(member_input.get("secret", False), bool):
        return "ask_human's secret must be true or false."
    return None


def answered(text: str) -> str:
    return f"The operator answered:\n{text}"


def answered_secretly(placeholder: str) -> str:
    return (
        f"The operator answered with a secret. Type it as {placeholder} (type or form_input, exactly that "
        "placeholder): the browser substitutes the value, which you never see."
    )


def not_answered(seconds: int) -> str:
    return (
        f"No one answered within {seconds} s. Continue without the answer if you can; otherwise call done with "
        "success false and say what you needed."
    )


def handed_back(by: str, note: str) -> str:
    said = f" Their note: {note}" if note.strip() else " They left no note."
    return (
        f"[operator] A person ({by}) had control of the browser while you were paused and may have changed the "
        f"page; look at it again before you act.{said}"
    )


def resumed_after_timeout() -> str:
    return "[operator] The run was paused and resumed by itself after no one handed it back; the page may have changed."


def steered(by: str, text: str) -> str:
    return f"[operator] A message from the operator ({by}): {text}"


class Waiter:
    """Sleeps until the run's wake token changes (the web changed something this run waits on), or at most
    DATABASE_RECHECK_SECONDS, or the given time; the caller re-reads the database after each wait."""

    def __init__(self, run_public_id: str) -> None:
        self.run_public_id = run_public_id
        self.token = wake_token(run_public_id)

    def wait(self, at_most: float) -> None:
        db.release()  # a person may take minutes: no connection held meanwhile
        deadline = time.monotonic() + max(0.0, min(at_most, DATABASE_RECHECK_SECONDS))
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(WAKE_POLL_SECONDS, left))
            token = wake_token(self.run_public_id)
            if token != self.token:
                self.token = token
                return
