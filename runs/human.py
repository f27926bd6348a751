"""A person in the loop: the agent's questions to the operator (ask_human) and their answers, pause and resume
(taking control of the run's browser), and messages queued for the agent's next request.

The database is the record; the worker is woken through a token in the shared cache (Redis), which the web changes
after each commit that the waiting agent must see. The worker polls that token (one cache read) twice a second and
re-reads the database only when it changed, or every few seconds in case the cache lost it: an answer reaches the
agent within half a second, and a run waiting for a person costs Redis one small read per poll, not the database.
"""

import secrets as random
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from agent_platform.errors import Conflict, InvalidRequest, NotFound
from agent_platform.lib.timestamps import rfc3339

from .events import emit
from .models import Run, RunInput, RunMessage
from .secret_box import seal_value, unseal, unseal_value
from .secrets import mask, secret_value_problem

QUESTION_MAX_CHARS = 2_000
TEXT_MAX_CHARS = 10_000
# The name a secret answer is known by among the run's secrets: the agent types {{secret:ANSWER_<n>}}.
SECRET_ANSWER_NAME = "ANSWER_{}"
# Who ended a pause no one handed back (run.resumed's `by`).
PAUSE_TIMED_OUT = "timeout"


def wake_key(run_public_id: str) -> str:
    return f"run-wake:{run_public_id}"


def wake_token(run_public_id: str) -> str | None:
    try:
        token = cache.get(wake_key(run_public_id))
    except Exception:
        return None  # no cache: the worker falls back to reading the database every few seconds
    return str(token) if token is not None else None


def wake(run: Run) -> None:
    """Once the transaction commits: tell the worker waiting on this run that something changed."""

    def changed() -> None:
        try:
            cache.set(wake_key(run.public_id), random.token_hex(8), timeout=settings.RUN_INPUT_TIMEOUT_SECONDS + 600)
        except Exception:  # noqa: S110  (the worker's database fallback still sees it, a few seconds later)
            pass

    transaction.on_commit(changed)


def bounded_text(value: object, field: str, *, required: bool, maximum: int = TEXT_MAX_CHARS) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidRequest.of_field(field, "must be a string")
    if "\x00" in value:
        raise InvalidRequest.of_field(field, "must not contain NUL")
    if required and not value.strip():
        raise InvalidRequest.of_field(field, "is required")
    if len(value) > maximum:
        raise InvalidRequest.of_field(field, f"has {len(value)} characters; at most {maximum} are allowed")
    return value


# --- what the API and the run page show -------------------------------------------------------------------------


def pending_input(run: Run) -> dict[str, Any] | None:
    """The question the agent waits on, if any (the API's `pending_input`, the run page's and MCP's): the runs API
    prefetches it as `pending`."""
    if run.status != Run.Status.RUNNING:
        return None
    prefetched = getattr(run, "pending", None)
    if prefetched is not None:
        waiting = prefetched[0] if prefetched else None
    else:
        waiting = run.inputs.filter(state=RunInput.State.PENDING).first()
    return waiting.as_pending() if waiting is not None else None


def running_agent_run(run: Run, doing: str) -> Run:
    """The run, locked, if a person can act on its agent now (in a transaction); a run that ended, has not started
    or has no agent (a sign-in by hand) is conflict."""
    locked = Run.objects.select_for_update().get(pk=run.pk)
    if locked.kind != Run.Kind.AGENT:
        raise Conflict(f"Run {locked.public_id} has no agent (a sign-in by hand): it cannot be {doing}.")
    if locked.status != Run.Status.RUNNING:
        ended: dict[str, str] = {Run.Status.QUEUED: "has not started yet", Run.Status.CANCELLED: "was cancelled"}
        state = ended.get(locked.status, f"has {locked.status}")
        raise Conflict(f"The run {state}; only a running run can be {doing}.")
    return locked


# --- the operator's side (the web) -------------------------------------------------------------------------------


def answer_input(run: Run, input_id: object, text: object, *, by: str) -> RunInput:
    """Answer the run's pending question. Another run's or an unknown id is not_found; one already answered (or timed
    out, or of a run that ended) is conflict. A secret answer is sealed at rest and never appears in an event."""
    if not isinstance(input_id, str) or not input_id:
        raise InvalidRequest.of_field("id", "is required: the pending input's id (inp_…)")
    with transaction.atomic():
        found = RunInput.objects.select_for_update().filter(run=run, public_id=input_id).first()
        if found is None:
            raise NotFound(f"No input '{input_id[:60]}' on run {run.public_id}.")
        if found.state != RunInput.State.PENDING:
            raise Conflict(f"The input {found.public_id} is {found.state.replace('_', ' ')}; it takes no answer now.")
        if found.secret:
            answer = bounded_text(text, "text", required=True)
            problem = secret_value_problem(answer)
            if problem is not None:
                raise InvalidRequest.of_field("text", f"a secret answer {problem}")
            stored = seal_value(answer)
        else:
            stored = bounded_text(text, "text", required=True)
        found.state = RunInput.State.ANSWERED
        found.answer = stored
        found.answered_by = by
        found.answered_at = timezone.now()
        found.save(update_fields=["state", "answer", "answered_by", "answered_at"])
        data: dict[str, Any] = {"id": found.public_id, "secret": found.secret, "by": by}
        if not found.secret:
            data["text"] = stored
        emit(run, "run.input_received", data)
        wake(run)
    return found


def pause(run: Run, *, by: str) -> Run:
    """Stop the agent before its next model request (the turn in progress finishes). Pausing a paused run changes
    nothing; a run that is not running is conflict."""
    with transaction.atomic():
        locked = running_agent_run(run, "paused")
        if locked.paused_at is None:
            Run.objects.filter(pk=run.pk).update(paused_at=timezone.now())
            emit(locked, "run.paused", {"by": by})
            wake(locked)
    run.refresh_from_db()
    return run


def resume(run: Run, *, by: str, note: object = "") -> Run:
    """Hand the run back to the agent: its next request carries a user message saying a person had control, with
    their note. A run that is not paused is conflict."""
    note_text = bounded_text(note, "note", required=False)
    with transaction.atomic():
        locked = running_agent_run(run, "resumed")
        if locked.paused_at is None:
            raise Conflict("The run is not paused.")
        end_pause(locked, by=by, note=note_text)
    run.refresh_from_db()
    return run


def end_pause(run: Run, *, by: str, note: str) -> bool:
    """Clear the pause once (the operator's resume, or the worker's timeout: `by` PAUSE_TIMED_OUT) and queue the
    hand-back message."""
    kind = RunMessage.Kind.TIMED_OUT if by == PAUSE_TIMED_OUT else RunMessage.Kind.HANDBACK
    with transaction.atomic():
        if not Run.objects.filter(pk=run.pk, paused_at__isnull=False).update(paused_at=None):
            return False
        RunMessage.objects.create(run=run, kind=kind, text=note, sent_by=by)
        emit(run, "run.resumed", {"by": by, "note": note})
        wake(run)
    return True


def queue_message(run: Run, text: object, *, by: str) -> RunMessage:
    """Queue a message the agent receives as a user message with its next request."""
    message_text = bounded_text(text, "text", required=True)
    with transaction.atomic():
        # Locked: a message queued as the run ends is refused, never lost. A queued run takes messages too.
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.kind != Run.Kind.AGENT or locked.is_finished:
            raise Conflict(f"Run {locked.public_id} takes no messages: it has ended, or has no agent.")
        message = RunMessage.objects.create(run=run, text=message_text, sent_by=by)
        # The event is masked as every other: the web holds the run's secrets sealed, so emit's own mask cannot.
        shown = mask(message_text, unseal(locked.secrets))
        emit(run, "run.message_queued", {"text": shown, "by": by, "queued_at": rfc3339(message.queued_at)})
        wake(run)
    return message


def withdraw_message(message: RunMessage, *, by: str) -> RunMessage:
    """Take back a message the agent has not received yet; one it received (or one of a run that ended) is conflict.
    The row goes; the timeline says it was withdrawn."""
    with transaction.atomic():
        locked = RunMessage.objects.select_for_update().filter(pk=message.pk).select_related("run").first()
        if locked is None or locked.delivered_at is not None:
            raise Conflict("The agent has received this message already; it cannot be withdrawn.")
        locked.delete()
        emit(locked.run, "run.message_withdrawn", {"text": locked.text, "by": by})
    return message


# --- the agent's side (the worker) -------------------------------------------------------------------------------


def ask(run: Run, question: str, *, secret: bool) -> RunInput:
    """The agent asks the operator; the run shows it as pending until answered or timed out."""
    with transaction.atomic():
        # a question left pending by an earlier call (a crash between two steps) is closed: one waits at a time
        RunInput.objects.filter(run=run, state=RunInput.State.PENDING).update(state=RunInput.State.CLOSED)
        asked = RunInput.objects.create(run=run, question=question, secret=secret)
        emit(run, "run.input_requested", {"id": asked.public_id, "question": question, "secret": secret})
    return asked


def answer_of(asked: RunInput) -> str | None:
    """The answer, opened; None while pending."""
    asked.refresh_from_db(fields=["state", "answer"])
    if asked.state != RunInput.State.ANSWERED:
        return None
    return str(unseal_value(asked.answer)) if asked.secret else asked.answer


def time_out(run: Run, asked: RunInput) -> bool:
    """No one answered in time; False if an answer came first."""
    with transaction.atomic():
        if not RunInput.objects.filter(pk=asked.pk, state=RunInput.State.PENDING).update(
            state=RunInput.State.TIMED_OUT
        ):
            return False
        emit(run, "run.input_timed_out", {"id": asked.public_id, "after_seconds": settings.RUN_INPUT_TIMEOUT_SECONDS})
    return True


def close_inputs(run: Run) -> None:
    """The run ended: a pending question takes no answer, and secret answers are dropped, like the run's secrets."""
    RunInput.objects.filter(run=run, state=RunInput.State.PENDING).update(state=RunInput.State.CLOSED)
    RunInput.objects.filter(run=run, secret=True).exclude(answer="").update(answer="")


def paused_since(run: Run) -> Any:
    return Run.objects.filter(pk=run.pk).values_list("paused_at", flat=True).first()


def take_messages(run: Run) -> list[RunMessage]:
    """The messages queued for the agent, in order, marked delivered (each is delivered once)."""
    with transaction.atomic():
        queued = list(RunMessage.objects.select_for_update().filter(run=run, delivered_at__isnull=True))
        if not queued:
            return []
        RunMessage.objects.filter(pk__in=[message.pk for message in queued]).update(delivered_at=timezone.now())
    return queued
