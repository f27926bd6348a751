"""What an action's element is, in terms a page change cannot silently redirect (role, accessible name, frame, nth
among the same role and name), found again with Playwright's role locators; and a page's structure fingerprint.

A ref (`e14`) is only valid for the snapshot that printed it, and a coordinate for one layout: a recipe made from a
run keeps what the ref pointed to when the agent acted, so a replay finds the element the same way a person would
describe it ("the button 'Send message'"), or finds nothing and says so."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Frame, Locator, Page

# How long a replay waits for a step's element to be there (a page still rendering), and an action on it.
FIND_TIMEOUT_MS = 5_000
# The first line of an element's own aria snapshot: its role, then its accessible name when it has one.
ELEMENT_LINE = re.compile(r'^- ([a-z]+)(?: ("(?:[^"\\]|\\.)*"))?')
ROLE_OF_ANY_LINE = re.compile(r"^(\s*)- ([a-z]+)")
# A ref's frame part: `f3` of `f3e12`, "" of `e12`. Playwright gives the main frame a new number each time it loads
# another document, so a page's own refs read `f3e12` after its first navigation, and only the snapshot that printed
# them tells the main frame's number from a child frame's.
REF_FRAME = re.compile(r"^(f\d+)?e\d+$")
FIRST_REF = re.compile(r"\[ref=(f\d+)?e\d+\]")
# Roles Playwright's get_by_role cannot find: an element that has only these is not a target a replay can find.
UNFINDABLE_ROLES = frozenset({"generic", "text", "none", "presentation"})


def element_line(snapshot: str) -> tuple[str, str] | None:
    """(role, name) from an element's own aria snapshot (mode "ai"); name is "" when it has none."""
    first = snapshot.strip().splitlines()[0] if snapshot.strip() else ""
    match = ELEMENT_LINE.match(first)
    if match is None:
        return None
    role, quoted = match.group(1), match.group(2)
    if quoted is None:
        return role, ""
    try:
        name = json.loads(quoted)
    except ValueError:
        name = quoted[1:-1]
    return role, str(name)


def structure_of(snapshot: str) -> str:
    """A page's aria snapshot reduced to its shape: each line's depth and role, without names, values or text.

    What an operator types, and what the page echoes of it ("Thank you, Ada!"), changes names and text but not the
    page's shape; another page, a missing field or an error list changes the shape."""
    lines = []
    for line in snapshot.splitlines():
        match = ROLE_OF_ANY_LINE.match(line)
        if match is not None:
            lines.append(f"{len(match.group(1))}:{match.group(2)}")
    return "\n".join(lines)


def structure_fingerprint(url: str, snapshot: str) -> str:
    """A short hash of a page's URL and shape (structure_of): a recipe step's checkpoint."""
    return hashlib.sha256(f"{url}\n{structure_of(snapshot)}".encode()).hexdigest()[:16]


def ref_frame(ref: str) -> str | None:
    """The frame part of a ref (`f3` of `f3e12`, "" of `e12`); None when it is no ref of Playwright's."""
    match = REF_FRAME.match(ref)
    return None if match is None else (match.group(1) or "")


def main_frame_of(snapshot: str) -> str | None:
    """The frame part of the main frame's refs in a whole page's snapshot: its first ref's, as the page's own root
    element comes before any child frame's content (and an iframe element before what it holds). None when the
    snapshot has no ref."""
    match = FIRST_REF.search(snapshot)
    return None if match is None else (match.group(1) or "")


def frame_of(frame: Frame) -> dict[str, str] | None:
    """How a step names its frame: None for the page's own document, else the frame's name and URL."""
    if frame.parent_frame is None:
        return None
    return {"name": frame.name, "url": frame.url}


def printed_as(snapshot: str, ref: str) -> tuple[str, str] | None:
    """(role, name) of the element a whole page's snapshot printed with `ref`, as element_line reads them; None
    when the snapshot has no such ref."""
    at = snapshot.find(f"[ref={ref}]")
    if at < 0:
        return None
    return element_line(snapshot[snapshot.rfind("\n", 0, at) + 1 : at].strip())


async def describe(
    page: Page, locator: Locator, *, in_frame: bool = False, printed: tuple[str, str] | None = None
) -> dict[str, Any] | None:
    """What `locator` (an aria ref, as the agent named it) points to now: {role, name, nth, frame}, or None when it
    is no element a role locator finds again (no role, or the accessible names disagree). `in_frame`: the ref is a
    child frame's (`f1e3`); a page's own refs (`e3`) are in its main frame. `printed`: the role and name the page's
    last whole snapshot printed for the ref (printed_as), used for a page's own ref.

    Its cost is on every action of every run. With `printed`, one round trip asks two things at once: whether the
    element still has that role and name, and how many elements have them. Without, the element's own snapshot says
    what it is, then the count is asked. Only when several elements share the role and name is the element's index
    among them looked up."""
    try:
        handle = None
        frame: Frame = page.main_frame
        if printed is not None and not in_frame:
            role, name = printed
            if role in UNFINDABLE_ROLES:
                return None
            found = by_role(frame, role, name)
            still, count = await asyncio.gather(found.and_(locator).count(), found.count())
            if still != 1:
                # The page renamed (or hid) it since the snapshot. Its own snapshot would tell what it is now, but
                # would also give it a new ref, and the action on the agent's ref would then find nothing.
                return None
        else:
            described = element_line(await locator.aria_snapshot(mode="ai", depth=1, timeout=FIND_TIMEOUT_MS))
            if described is None or described[0] in UNFINDABLE_ROLES:
                return None
            role, name = described
            if in_frame:
                handle = await locator.element_handle(timeout=FIND_TIMEOUT_MS)
                owner = await handle.owner_frame()
                if owner is None:
                    return None
                frame = owner
            found = by_role(frame, role, name)
            count = await found.count()
        nth: Any = 0
        if count == 0:
            return None
        if count > 1:
            handle = handle or await locator.element_handle(timeout=FIND_TIMEOUT_MS)
            nth = await found.evaluate_all("(found, element) => found.indexOf(element)", handle)
    except PlaywrightError:
        return None
    if not isinstance(nth, int) or nth < 0:
        return None
    return {"role": role, "name": name, "nth": nth, "frame": frame_of(frame)}


async def describe_focused(page: Page) -> dict[str, Any] | None:
    """The element that has the keyboard's focus in the page's own document (what `type` and `key` act on),
    described as `describe` does."""
    focused = page.locator("*:focus")
    try:
        if await focused.count() != 1:
            return None
    except PlaywrightError:
        return None
    return await describe(page, focused)


def by_role(frame: Frame | Page, role: str, name: str) -> Locator:
    if name:
        return frame.get_by_role(role, name=name, exact=True)  # type: ignore[arg-type]
    return frame.get_by_role(role)  # type: ignore[arg-type]


def find_frame(page: Page, described: dict[str, str] | None) -> Frame | None:
    if not described:
        return page.main_frame
    for frame in page.frames:
        if described.get("name") and frame.name == described["name"]:
            return frame
    for frame in page.frames:
        if frame.url == described.get("url"):
            return frame
    return None


async def locate(page: Page, target: dict[str, Any]) -> Locator | None:
    """The element a step's target names, on the page as it is now, waiting a little for it to appear; None when it
    is not there."""
    frame = find_frame(page, target.get("frame"))
    if frame is None:
        return None
    locator = by_role(frame, str(target["role"]), str(target.get("name") or "")).nth(int(target.get("nth") or 0))
    try:
        await locator.wait_for(state="attached", timeout=FIND_TIMEOUT_MS)
    except PlaywrightError:
        return None
    return locator
