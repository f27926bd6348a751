"""The event-type registry (runs/event_types.py) is the one list of event types: writers refuse a type it does not
declare, every type the code writes or reads is declared, and the doors that derive from it (docs/events.md, the
webhooks' choices, the run page's drawing and scripts) agree with it."""

import ast
import re

import pytest

from browsers import services as browser_services
from runs import event_types
from runs.event_types import REGISTRY, Door, Follow, Record
from runs.events import emit, emit_many
from runs.models import Event
from scripts.event_docs import PAGE, catalogue
from tests.support.factories import make_run
from tests.support.paths import REPO
from webhooks.models import EventType as WebhookEventType

NOT_PRODUCT = {"tests", "bench", "node_modules", "scripts"}
NAME = re.compile(r"^[a-z][a-z_]*\.[a-z][a-z_]*$")
# Calls whose first argument (after the run or session) is the type of an event written: runs.events.emit, the turn
# record's and the run browser's `event`, browsers.services.record and the session runner's `note`.
WRITERS = {"emit": 1, "event": 0, "record": 1, "note": 0}
# Query keywords that select events by type.
TYPE_KEYWORDS = {"type", "type__in"}


def product_files():
    for init in REPO.glob("*/__init__.py"):
        if init.parent.name not in NOT_PRODUCT:
            yield from (path for path in init.parent.rglob("*.py") if "migrations" not in path.parts)


def constants(node):
    """The string constants of a constant, or of a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [value for item in node.elts for value in constants(item)]
    return []


def types_named_in(tree):
    """(line, type) of each event type the code writes or selects by a literal: the writers' type argument,
    `(type, {data})` pairs handed to a writer, `.type == ...` and `.type in (...)` comparisons, and `type=` /
    `type__in=` in queries."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            position = WRITERS.get(name)
            if position is not None and len(node.args) > position:
                found += [(node.lineno, value) for value in constants(node.args[position])]
            found += [
                (node.lineno, value)
                for keyword in node.keywords
                if keyword.arg in TYPE_KEYWORDS
                for value in constants(keyword.value)
            ]
        elif isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[1], ast.Dict):
            found += [(node.lineno, value) for value in constants(node.elts[0]) if NAME.match(value)]
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "type":
            found += [(node.lineno, value) for right in node.comparators for value in constants(right)]
    return [(line, value) for line, value in found if NAME.match(value)]


# --- writers refuse what is not declared -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_emit_refuses_a_type_the_registry_does_not_declare_and_stores_nothing(acme):
    run = make_run(acme)
    with pytest.raises(ValueError, match=r"run\.made_up"):
        emit(run, "run.made_up", {})
    with pytest.raises(ValueError, match=r"browser\.started"):  # a browser session's type, not a run's
        emit(run, "browser.started", {})
    with pytest.raises(ValueError, match=r"agent\.guess"):
        emit_many(
            run, [("agent.message", {"text": "hi", "turn": 1}, run.created_at), ("agent.guess", {}, run.created_at)]
        )
    assert not Event.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert run.last_seq == 0
    assert emit(run, "run.started", {"model": run.model, "max_turns": 3, "scripted": False}).seq == 1


def test_a_browser_session_refuses_a_type_the_registry_does_not_declare_for_it():
    with pytest.raises(ValueError, match=r"run\.started"):
        browser_services.record(0, "run.started", {})
    with pytest.raises(ValueError, match=r"browser\.made_up"):
        browser_services.record(0, "browser.made_up", {})


# --- the code names declared types only --------------------------------------------------------------------------------


def test_every_event_type_the_product_writes_or_selects_is_declared():
    unknown = [
        f"{path.relative_to(REPO)}:{line} {value}"
        for path in product_files()
        for line, value in types_named_in(ast.parse(path.read_text()))
        if value not in REGISTRY
    ]
    assert unknown == []


def test_the_scan_finds_the_writers_and_readers_it_is_meant_to():
    tree = ast.parse(
        "emit(run, 'run.made_up', {})\n"
        "self.record.event('agent.made_up', {})\n"
        "steps.append(('agent.also_made_up', {'name': 'x'}))\n"
        "if event.type == 'run.compared': pass\n"
        "Event.objects.filter(type__in=['run.selected'])\n"
        "path('', include('runs.urls'))\n"
    )
    assert sorted(value for _line, value in types_named_in(tree)) == [
        "agent.also_made_up",
        "agent.made_up",
        "run.compared",
        "run.made_up",
        "run.selected",
    ]


def test_the_run_page_scripts_name_declared_run_event_types_only():
    run_types = {kind.name for kind in event_types.kinds(record=Record.RUN)}
    compared = re.compile(r"""(?:\btype\s*===\s*|case\s+)"([a-z_]+\.[a-z_]+)\"""")
    unknown = []
    for script in (REPO / "static" / "js").glob("*.js"):
        for match in compared.finditer(script.read_text()):
            line = script.read_text()[: match.start()].count("\n") + 1
            # the runs list's socket says run.changed and batch.changed: messages of the socket, not events
            if match.group(1) not in run_types and match.group(1) not in ("run.changed", "batch.changed"):
                unknown.append(f"{script.name}:{line} {match.group(1)}")
    assert unknown == []


def test_the_scripts_take_the_types_they_follow_from_the_page_not_from_a_list_of_their_own():
    for name in ("run.js", "run_panels.js"):
        script = (REPO / "static" / "js" / name).read_text()
        assert "config.event_types." in script
        assert not re.search(r"var (?:SUMMARY_TYPES|KNOWN|CHANGES) = \{", script)


# --- the doors agree with the registry --------------------------------------------------------------------------------


def test_docs_events_is_the_registry_s_catalogue():
    documented = re.findall(r"^### `([^`]+)`$", PAGE.read_text(), re.MULTILINE)
    assert sorted(documented) == sorted(REGISTRY), "run `make event-docs`"
    assert PAGE.read_text() == catalogue(), "docs/events.md is out of date: run `make event-docs`"


def test_every_declared_type_says_what_it_means_and_where_it_is_shown():
    for kind in REGISTRY.values():
        assert kind.means.endswith(".") and len(kind.means) > 10, kind.name
        assert kind.doors, kind.name
        assert all(meaning for meaning in kind.payload.values()), kind.name
        if kind.follows or kind.drawn or kind.announced:
            assert kind.record == Record.RUN, kind.name


def test_webhook_subscriptions_are_the_types_with_the_webhooks_door():
    assert sorted(WebhookEventType.values) == sorted(event_types.WEBHOOK)
    table = re.findall(r"^\| `([a-z_.]+)` \|", (REPO / "docs" / "webhooks.md").read_text(), re.MULTILINE)
    assert sorted(table) == sorted(event_types.WEBHOOK)


def test_the_timeline_template_draws_exactly_the_types_declared_drawn():
    template = (REPO / "templates" / "runs" / "_event.html").read_text()
    assert set(re.findall(r'item\.type == "([a-z_.]+)"', template)) == event_types.DRAWN


def test_what_pages_follow_comes_from_the_registry():
    from runs.events import ROW_CHANGING_TYPES
    from runs.signals import LIFECYCLE_EVENT_TYPES

    assert event_types.following(Follow.ROW) == ROW_CHANGING_TYPES and "agent.tool_result" in ROW_CHANGING_TYPES
    assert {"run.finished", "run.judged", "file.downloaded", "run.input_requested"} == LIFECYCLE_EVENT_TYPES
    assert tuple(kind.name for kind in event_types.kinds(door=Door.MCP)) == event_types.MCP_TURNS
