"""`make event-docs`: docs/events.md, the catalogue of every event type, written from the registry (runs.event_types);
tests/foundation/test_event_registry.py fails while the page and the registry disagree."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runs.event_types import REGISTRY, Door, EventKind, Follow, Record, kinds  # noqa: E402  (after the path is set)

PAGE = REPO / "docs" / "events.md"

INTRO = """\
# Events

<!-- Written by `make event-docs` (scripts/event_docs.py) from runs/event_types.py: edit the registry, not this page.
tests/foundation/test_event_registry.py fails while the two disagree. -->

Everything that happens to a run is an event: a row of the run's append-only record with a `seq` (gap-free in the
run), a `type`, a `payload` and the time it was processed, committed to the database before it is pushed to anyone
([architecture.md](architecture.md)). A browser session over CDP keeps a timeline of its own events
([browsers.md](browsers.md)), and a few types are only ever sent (a webhook delivery, a name v4 gives a moment).

Every type is declared once, in `runs/event_types.py`, with what it means, what its payload carries and which doors
show it; writing an event of a type not declared there is refused. This page is written from that registry.

## The doors

| door | what it shows |
|---|---|
| v1 events | `GET /api/v1/runs/{id}/events` and the run's socket (`/ws/runs/{id}/`): every run event, as stored ([api.md](api.md)) |
| run page | the run's timeline ([console.md](console.md)): every run event; the types marked *drawn* in their own way, any other as its raw data, folded |
| share page | a share link's read-only timeline, drawn as the run page draws it ([sharing.md](sharing.md)) |
| v4 events | `GET /api/v4/runs/{id}/events`: every run event, some under v4's own names ([browser-use-compat.md](browser-use-compat.md)) |
| MCP | `wait_for_run`'s turn lines ([mcp.md](mcp.md)) |
| webhooks | an endpoint can subscribe to the type; the delivery's `data` wraps the run (and more) ([webhooks.md](webhooks.md)) |
| browser events | `GET /api/v1/browsers/{id}/events`: a browser session's timeline ([browsers.md](browsers.md)) |

Some run events also make a page read its state again: the run page's **summary** (verdict, judge, signals, usage,
the header's numbers), its **panels** (actions, the person card, files, the follow-up card), and the run's **runs list
row** (the list's socket is told about these types only). The **announced** ones are sent, once committed, to the
apps that follow a run's life (webhooks, batches, schedules, recipes) through `runs.signals.run_lifecycle_event`.
"""

SECTIONS = (
    (Record.RUN, "A run's events"),
    (Record.SENT, "Sent, not recorded"),
    (Record.BROWSER, "A browser session's events"),
)
DOOR_ORDER = list(Door)


def door_text(kind: EventKind, door: Door) -> str:
    text = str(door)
    if door is Door.RUN_PAGE and kind.drawn:
        text += " (drawn)"
    if door is Door.V4 and kind.v4_names:
        text += " (as " + ", ".join(f"`{name}`" for name in kind.v4_names.values()) + ")"
    return text


def entry(kind: EventKind) -> str:
    lines = [f"### `{kind.name}`", "", kind.means, ""]
    doors = [door_text(kind, door) for door in DOOR_ORDER if door in kind.doors]
    lines.append("Shown by: " + ", ".join(doors) + ".")
    if kind.follows:
        lines.append("Re-read on it: " + ", ".join(str(follow) for follow in Follow if follow in kind.follows) + ".")
    if kind.announced:
        lines.append("Announced to the run's listeners once committed.")
    lines.append("")
    if kind.payload:
        lines += ["| field | what it carries |", "|---|---|"]
        lines += [f"| `{name}` | {meaning} |" for name, meaning in kind.payload.items()]
    else:
        lines.append("No fields.")
    return "\n".join(lines) + "\n"


def catalogue() -> str:
    parts = [INTRO]
    for record, title in SECTIONS:
        parts.append(f"## {title}\n")
        parts += [entry(kind) for kind in kinds(record=record)]
    assert sum(len(kinds(record=record)) for record, _ in SECTIONS) == len(REGISTRY)
    return "\n".join(parts)


def main() -> int:
    PAGE.write_text(catalogue())
    print(f"wrote {PAGE.relative_to(REPO)}: {len(REGISTRY)} event types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
