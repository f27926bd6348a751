"""Every kind of event Pilothouse records or sends, declared once: its name, what it means, what its payload carries
and which doors show it. Writers refuse a name not declared here (runs.events.emit, browsers.services.record); the
run page's scripts, webhooks, v4, MCP and docs/events.md derive from here (tests/foundation/test_event_registry.py).

This module imports nothing of the project, so every app (and the docs script) can read it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class Record(StrEnum):
    """Where an event of the kind is kept."""

    RUN = "run"  # a run's Event row, numbered by seq (runs.events)
    BROWSER = "browser"  # a browser session's BrowserEvent row (browsers.services.record)
    SENT = "sent"  # kept nowhere as an event: a webhook delivery, or a name only one door says


class Door(StrEnum):
    """Where someone outside the code sees events."""

    V1 = "v1 events"  # GET /api/v1/runs/{id}/events and the run's socket: every run event, as stored
    RUN_PAGE = "run page"  # the run's timeline: drawn its own way when `drawn`, else its raw data, folded
    SHARE = "share page"  # a share link's read-only timeline, drawn as the run page draws it
    V4 = "v4 events"  # GET /api/v4/runs/{id}/events: every run event, some under v4's names (`v4_names`)
    MCP = "MCP"  # wait_for_run's and get_run's turn lines
    WEBHOOK = "webhooks"  # an endpoint can subscribe to it (webhooks.models.EventType)
    BROWSER = "browser events"  # GET /api/v1/browsers/{id}/events and the browser session's page


# The doors every event of a record goes through, whatever its kind.
RECORD_DOORS = {
    Record.RUN: frozenset({Door.V1, Door.RUN_PAGE, Door.SHARE, Door.V4}),
    Record.BROWSER: frozenset({Door.BROWSER}),
    Record.SENT: frozenset(),
}


class Follow(StrEnum):
    """What a page re-reads from the server when an event of the kind arrives."""

    SUMMARY = "summary"  # the run page's summary and header numbers (runs:summary)
    PANELS = "panels"  # the run page's actions, person card, files and follow-up card (runs:panels)
    ROW = "runs list row"  # the run's row of the runs list (its socket is told about these only)


@dataclass(frozen=True)
class EventKind:
    name: str
    means: str
    # field name -> what it carries; for a SENT kind, the fields of what is sent
    payload: Mapping[str, str]
    record: Record = Record.RUN
    # doors beyond the record's own (RECORD_DOORS)
    also: frozenset[Door] = frozenset()
    # the run page's timeline draws it its own way (templates/runs/_event.html, static/js/run.js)
    drawn: bool = False
    follows: frozenset[Follow] = frozenset()
    # sent to the apps that listen to a run's life (runs.signals.run_lifecycle_event) once committed
    announced: bool = False
    # v4's names for it, by the value of its payload's `status` (browser_use_v4.mapping)
    v4_names: Mapping[str, str] = field(default_factory=dict)

    @property
    def doors(self) -> frozenset[Door]:
        return RECORD_DOORS[self.record] | self.also


REGISTRY: dict[str, EventKind] = {}


def declare(
    name: str,
    means: str,
    payload: Mapping[str, str],
    *,
    record: Record = Record.RUN,
    also: Iterable[Door] = (),
    drawn: bool = False,
    follows: Iterable[Follow] = (),
    announced: bool = False,
    v4_names: Mapping[str, str] | None = None,
) -> EventKind:
    if name in REGISTRY:
        raise ValueError(f"event type {name} is declared twice")
    kind = EventKind(
        name,
        means,
        payload,
        record=record,
        also=frozenset(also),
        drawn=drawn,
        follows=frozenset(follows),
        announced=announced,
        v4_names=v4_names or {},
    )
    REGISTRY[name] = kind
    return kind


SUMMARY, PANELS, ROW = Follow.SUMMARY, Follow.PANELS, Follow.ROW

# --- a run's life ------------------------------------------------------------------------------------------------------

RUN_WAITING = declare(
    "run.waiting",
    "The run is queued behind another: an earlier run of its session, or the workspace's concurrency limit.",
    {
        "behind": "the earlier run of the session it waits for (run_…)",
        "behind_status": "that run's status when this one was queued",
        "reason": "`workspace_limit` when it waits for a slot of the workspace",
        "max_concurrent_runs": "the workspace's limit, with `reason`",
    },
    drawn=True,
)
RUN_STARTED = declare(
    "run.started",
    "A worker took the run and its agent starts.",
    {"model": "the model it runs on", "max_turns": "its turn budget", "scripted": "true on the scripted demo model"},
    drawn=True,
    follows=(SUMMARY, PANELS, ROW),
)
MODEL_DEPRECATED = declare(
    "model.deprecated",
    "The run was launched on a deprecated model; the page and the runs list show a badge.",
    {"model": "the model's id", "retires_at": "when it retires (ISO date) or null", "message": "the warning shown"},
)
RUN_REQUEUED = declare(
    "run.requeued",
    "A queued run no worker took was sent to the workers again.",
    {"waited_seconds": "how long it had waited", "reason": "why it was sent again"},
    follows=(PANELS,),
)
RUN_FINISHED = declare(
    "run.finished",
    "The run ended: succeeded, failed or cancelled; the judge and outcome evaluations may follow.",
    {
        "status": "succeeded, failed or cancelled",
        "success": "the agent's own claim (done's success), or null",
        "error_code": "task_failed, agent_limit, agent_incomplete, model_error, browser_error, cancelled, timeout "
        "or null",
        "error_message": "the human message with error_code, or null",
        "external": "true for a browser session's run (an outside agent's claim)",
    },
    also=(Door.WEBHOOK,),
    drawn=True,
    follows=(SUMMARY, PANELS, ROW),
    announced=True,
    v4_names={"succeeded": "run.completed", "failed": "run.failed", "cancelled": "run.cancelled"},
)
RUN_JUDGED = declare(
    "run.judged",
    "The judge's verdict on the run was recorded (again on re-judging).",
    {
        "verdict": "pass, fail or uncertain",
        "reason": "the judge's reason",
        "blocked": "the task was blocked (a captcha, a sign-in wall...)",
        "impossible": "the task could not be done as asked",
        "judged_at": "when (RFC 3339)",
        "judgment_id": "the judgment's row id",
    },
    also=(Door.WEBHOOK,),
    drawn=True,
    follows=(SUMMARY, ROW),
    announced=True,
)

# --- the agent's turns -------------------------------------------------------------------------------------------------

AGENT_MESSAGE = declare(
    "agent.message",
    "Text the model wrote in a reply (or its thinking, when the profile shows it).",
    {"text": "the text", "turn": "the model reply it belongs to", "source": "text or thinking"},
    also=(Door.MCP,),
    drawn=True,
)
AGENT_TOOL_USE = declare(
    "agent.tool_use",
    "The model called a tool: a browser action, done, ask_human...",
    {
        "id": "the call's tool_use id",
        "name": "the tool",
        "toolset": "browser for a browser action, else empty",
        "input": "the call's input, as the model wrote it",
        "turn": "the model reply it belongs to",
    },
    also=(Door.MCP,),
    drawn=True,
)
AGENT_TOOL_RESULT = declare(
    "agent.tool_result",
    "What a tool call returned to the model, with the runtime's [notice] lines.",
    {
        "tool_use_id": "the call it answers",
        "name": "the tool",
        "content": "the result's text (images as a placeholder), bounded",
        "notices": "the runtime's [notice] lines",
        "is_error": "the call failed or was refused",
        "screenshot_url": "the screenshot taken after the step, or null",
        "url": "the page's URL after the step",
        "turn": "the model reply it belongs to",
    },
    drawn=True,
    follows=(ROW,),
)
AGENT_USAGE = declare(
    "agent.usage",
    "One Messages API request was billed to the run (the agent's, the judge's, an extraction or a compaction).",
    {
        "source": "agent, judge, extraction or compaction",
        "model": "the model asked",
        "speed": "standard or fast",
        "input_tokens": "uncached input tokens",
        "output_tokens": "output tokens",
        "cache_read_input_tokens": "input tokens read from the cache",
        "cache_creation_input_tokens": "input tokens written to the cache",
        "cost_usd": "its cost, exact, as a string",
        "unpriced": "no price was in force for the model",
        "scripted": "a request to the scripted demo model",
    },
    drawn=True,
    follows=(SUMMARY, ROW),
)
AGENT_FINAL_VIEW = declare(
    "agent.final_view",
    "The page as the agent last saw it, kept for the judge and the grader.",
    {
        "url": "the page's URL",
        "title": "its title",
        "text": "its text, bounded",
        "screenshot_url": "a viewport screenshot, or null",
        "reference_texts": "a suite task's program checks, read before the browser closed (only then)",
    },
    drawn=True,
)
AGENT_TARGET = declare(
    "agent.target",
    "What a browser action acted on and the page it left: the steps a recipe is made from.",
    {
        "tool_use_id": "the call",
        "member": "the toolset member that acted",
        "target": "the element acted on (role, name), or null for a point of the page",
        "url": "the page's URL after the action",
        "fingerprint": "the page's layout after the action, for a recipe's checkpoint",
    },
    drawn=True,
)
AGENT_MESSAGE_DELIVERED = declare(
    "agent.message_delivered",
    "A person's message (or a hand-back after taking control) reached the model.",
    {"kind": "steer, handback or timed_out", "text": "the message", "by": "who sent it"},
)
CONTEXT_CLEARED = declare(
    "context.cleared",
    "Old screenshots, page texts or exchanges were left out of what is sent to the model.",
    {
        "turn": "the request it applies from",
        "reason": "why",
        "screenshots": "screenshots left out",
        "page_texts": "page texts left out",
        "exchanges": "whole exchanges left out",
        "tool_use_ids": "the results concerned",
        "tokens_saved": "tokens saved",
        "tokens_sent": "tokens sent after clearing",
    },
    drawn=True,
)
CONTEXT_COMPACTED = declare(
    "context.compacted",
    "The API's server-side compaction summarised the conversation.",
    {
        "turn": "the model reply",
        "strategy": "the compaction strategy",
        "tokens_before": "the prompt's tokens before",
        "tokens_after": "after",
        "tokens_saved": "the difference",
    },
    drawn=True,
)

# --- a person in the loop ------------------------------------------------------------------------------------------

RUN_INPUT_REQUESTED = declare(
    "run.input_requested",
    "The agent asked the operator a question (ask_human).",
    {"id": "the question (inp_…)", "question": "its text", "secret": "the answer is a secret (masked)"},
    also=(Door.WEBHOOK,),
    follows=(PANELS, ROW),
    announced=True,
)
RUN_INPUT_RECEIVED = declare(
    "run.input_received",
    "The operator answered the agent's question.",
    {"id": "the question", "secret": "a secret answer", "by": "who answered", "text": "the answer, unless secret"},
    follows=(PANELS, ROW),
)
RUN_INPUT_TIMED_OUT = declare(
    "run.input_timed_out",
    "Nobody answered the agent's question in time.",
    {"id": "the question", "after_seconds": "how long it waited"},
    follows=(PANELS, ROW),
)
RUN_PAUSED = declare(
    "run.paused",
    "A person took control of the run's browser; the agent waits.",
    {"by": "who"},
    follows=(PANELS, ROW),
)
RUN_RESUMED = declare(
    "run.resumed",
    "The person handed control back; the agent goes on.",
    {"by": "who", "note": "what they told the agent, if anything"},
    follows=(PANELS, ROW),
)
RUN_MESSAGE_QUEUED = declare(
    "run.message_queued",
    "A person's message waits for the agent's next turn.",
    {"text": "the message (masked)", "by": "who", "queued_at": "when (RFC 3339)"},
)
RUN_MESSAGE_WITHDRAWN = declare(
    "run.message_withdrawn",
    "A queued message was withdrawn before the agent received it.",
    {"text": "the message", "by": "who withdrew it"},
)

# --- workers and browsers ------------------------------------------------------------------------------------------

RUN_WORKER_LOST = declare(
    "run.worker_lost",
    "The run's worker stopped beating; the run goes to another worker from its last checkpoint.",
    {
        "worker": "the lost worker",
        "cause": "worker_lost",
        "worker_losses": "how many times the run lost its worker",
        "checkpoint_turn": "the turn the next worker goes on from",
    },
    drawn=True,
)
RUN_HANDED_OVER = declare(
    "run.handed_over",
    "The run's worker is stopping (drained) and handed the run to another.",
    {
        "worker": "the stopping worker",
        "cause": "drain",
        "worker_losses": "how many times the run lost its worker",
        "checkpoint_turn": "the turn the next worker goes on from",
    },
    drawn=True,
)
RUN_RECOVERED = declare(
    "run.recovered",
    "Another worker continued the run.",
    {"worker": "the worker now running it", "from_turn": "the turn it goes on from", "cause": "drain or worker_lost"},
    drawn=True,
    follows=(PANELS,),
)
BROWSER_RESTARTED = declare(
    "browser.restarted",
    "The run's tab or browser crashed and was reopened.",
    {
        "cause": "renderer_crash (a fresh tab) or browser_exit (a fresh browser from the saved state)",
        "url": "the page reopened",
        "recovery": "which recovery of the run's browser this is (1, 2...)",
    },
    drawn=True,
)
NETWORK_BLOCKED = declare(
    "network.blocked",
    "The address policy or the egress guard refused a request of the run's browser.",
    {"url": "the request's URL", "reason": "why it was refused", "proxy": "refused by the egress proxy"},
)
NETWORK_PROXY_ERROR = declare(
    "network.proxy_error",
    "The workspace's upstream proxy failed a request.",
    {"proxy": "the proxy's address (never its credentials)", "reason": "the failure", "destination": "the target"},
)
FILE_DOWNLOADED = declare(
    "file.downloaded",
    "The run's browser downloaded a file and it was kept.",
    {"id": "the file", "name": "its name", "size": "its size in bytes", "sha256": "its digest"},
    also=(Door.WEBHOOK,),
    follows=(PANELS,),
    announced=True,
)

# --- profiles and signing in by hand ---------------------------------------------------------------------------------

SIGN_IN_OPENED = declare(
    "sign_in.opened",
    "A sign-in by hand opened its browser at the start URL; the operator is in control.",
    {"url": "the start URL", "error": "why it could not be opened, if it could not"},
    follows=(PANELS,),
)
SIGN_IN_STATE = declare(
    "sign_in.state",
    "What Save would store now, read from the waiting sign-in's live browser (no value, no cookie's name).",
    {
        "cookies": "each cookie domain with how many cookies it holds",
        "local_storage_origins": "how many origins keep local storage",
        "indexed_db_origins": "how many origins keep IndexedDB",
        "looks_signed_in": "whether the page's host holds an HttpOnly cookie (a guess, said as one)",
        "host": "the host of the page the browser shows",
    },
    drawn=True,
    follows=(PANELS,),
)
SIGN_IN_SAVE_REQUESTED = declare(
    "sign_in.save_requested",
    "The operator asked to save the signed-in browser as the profile.",
    {},
    follows=(PANELS,),
)
PROFILE_SAVED = declare(
    "profile.saved",
    "The run's browser state was saved to its profile.",
    {"profile_id": "the profile", "cookie_domains": "the domains of its cookies", "size_bytes": "its size"},
    follows=(PANELS,),
)
PROFILE_NOT_SAVED = declare(
    "profile.not_saved",
    "The run's browser state was not saved to its profile.",
    {"reason": "why"},
)

# --- judging outcomes, recipes and schedules -----------------------------------------------------------------------

OUTCOME_EVALUATION_START = declare(
    "span.outcome_evaluation_start",
    "An outcome evaluation cycle began: the grader reads the run against its rubric.",
    {
        "id": "the event's own id (evt_…)",
        "outcome_id": "the outcome (outc_…)",
        "iteration": "the cycle, from 0",
        "processed_at": "when (RFC 3339)",
    },
    drawn=True,
    follows=(SUMMARY,),
)
OUTCOME_EVALUATION_END = declare(
    "span.outcome_evaluation_end",
    "An outcome evaluation cycle ended with its result.",
    {
        "id": "the event's own id (evt_…)",
        "outcome_evaluation_start_id": "the cycle's start event",
        "outcome_id": "the outcome",
        "iteration": "the cycle",
        "result": "satisfied, needs_revision, max_iterations_reached, failed or interrupted",
        "explanation": "the grader's explanation",
        "usage": "the grader's tokens",
        "processed_at": "when (RFC 3339)",
    },
    drawn=True,
    follows=(SUMMARY,),
)
RECIPE_STEP = declare(
    "recipe.step",
    "A replay ran one step of a recipe without the model.",
    {
        "step": "the step's number",
        "line": "the step as one line",
        "done": "it ran and its checkpoint held",
        "acted": "its action ran",
        "url": "the page's URL after it",
        "recipe_step": "the step as a healed version would keep it",
        "why": "why it was not done, if it was not",
    },
    drawn=True,
)
RECIPE_HEALING = declare(
    "recipe.healing",
    "A replay's step failed and the agent took over from there.",
    {"step": "the step that failed", "why": "why"},
    drawn=True,
)
SCHEDULE_DATA_CHANGED = declare(
    "schedule.data_changed",
    "A scheduled run's data differs from the schedule's previous succeeded run's.",
    {
        "schedule_id": "the schedule",
        "run_id": "this run",
        "previous_run_id": "the run compared with",
        "diff": "added, removed and changed paths",
    },
    also=(Door.WEBHOOK,),
)
SCHEDULE_RUN_FAILED = declare(
    "schedule.run_failed",
    "A scheduled run failed, or its judge failed it.",
    {
        "schedule_id": "the schedule",
        "run_id": "the run",
        "reason": "why it counts as failed",
        "consecutive_failures": "failures in a row",
        "paused": "the schedule paused itself",
    },
    also=(Door.WEBHOOK,),
)

# --- sent, not recorded ---------------------------------------------------------------------------------------------

BATCH_FINISHED = declare(
    "batch.finished",
    "Every run of an evaluation batch ended and, where judged, was judged.",
    {"batch": "the batch as the evals API gives it"},
    record=Record.SENT,
    also=(Door.WEBHOOK,),
)
BROWSER_READY = declare(
    "browser.ready",
    "v4 says it once, just before the run's first agent event, under that event's id (the browser is open by then).",
    {},
    record=Record.SENT,
    also=(Door.V4,),
)

# --- a browser session's timeline (CDP) ------------------------------------------------------------------------------

BROWSER_STARTED = declare(
    "browser.started",
    "The browser session's Chromium is up.",
    {"viewport": "[width, height]"},
    record=Record.BROWSER,
)
BROWSER_ENDED = declare(
    "browser.ended",
    "The browser session ended.",
    {
        "reason": "requested, idle_timeout, max_duration, finished, browser_exited, worker_lost or start_failed",
        "error": "the error, when it ended on one",
    },
    record=Record.BROWSER,
)
BROWSER_TARGET_CREATED = declare(
    "browser.target_created",
    "A tab of the session's browser was opened.",
    {"target_id": "the tab", "url": "its URL", "context_id": "its browser context"},
    record=Record.BROWSER,
)
BROWSER_TARGET_DESTROYED = declare(
    "browser.target_destroyed",
    "A tab of the session's browser was closed.",
    {"target_id": "the tab"},
    record=Record.BROWSER,
)
BROWSER_NAVIGATED = declare(
    "browser.navigated",
    "A tab of the session's browser went to another URL.",
    {"target_id": "the tab", "url": "its new URL", "title": "its title"},
    record=Record.BROWSER,
)
BROWSER_DOWNLOAD = declare(
    "browser.download",
    "The session's browser downloaded a file.",
    {"url": "where from", "name": "the file's name"},
    record=Record.BROWSER,
)
BROWSER_REFUSED = declare(
    "browser.refused",
    "The egress guard refused a request of the session's browser.",
    {"url": "the request's URL", "reason": "why"},
    record=Record.BROWSER,
)
BROWSER_CDP_REFUSED = declare(
    "browser.cdp_refused",
    "A CDP command of the client was refused.",
    {"reason": "why"},
    record=Record.BROWSER,
)
BROWSER_PROFILE_SAVED = declare(
    "browser.profile_saved",
    "The session's browser state was saved to its profile.",
    {"profile_id": "the profile"},
    record=Record.BROWSER,
)
BROWSER_FINISHED = declare(
    "browser.finished",
    "The client claimed the session's task finished; a run records the claim (and is judged when asked).",
    {"task": "the task claimed", "success": "the claim's success"},
    record=Record.BROWSER,
)


# --- what the doors derive -------------------------------------------------------------------------------------------


def kinds(*, record: Record | None = None, door: Door | None = None) -> list[EventKind]:
    """The declared kinds, in declaration order, of a record and through a door."""
    return [
        kind
        for kind in REGISTRY.values()
        if (record is None or kind.record == record) and (door is None or door in kind.doors)
    ]


def names(kinds_: Iterable[EventKind]) -> list[str]:
    return [kind.name for kind in kinds_]


def following(follow: Follow) -> frozenset[str]:
    """The run events a page part re-reads on."""
    return frozenset(kind.name for kind in REGISTRY.values() if follow in kind.follows)


def check(name: str, record: Record) -> None:
    """Refuse to write an event whose kind is not declared here for that record."""
    kind = REGISTRY.get(name)
    if kind is None or kind.record != record:
        raise ValueError(f"{name!r} is not a declared {record} event type (runs/event_types.py)")


DRAWN = frozenset(kind.name for kind in REGISTRY.values() if kind.drawn)
ANNOUNCED = frozenset(kind.name for kind in REGISTRY.values() if kind.announced)
WEBHOOK = names(kinds(door=Door.WEBHOOK))
MCP_TURNS = tuple(names(kinds(door=Door.MCP)))
