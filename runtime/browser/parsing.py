"""Pure helpers of the browser toolset: element refs and snapshot lines, page fingerprints, key chords, form values."""

from __future__ import annotations

import hashlib
import re

from anthropic.tools import ToolError

# Roles an agent acts on; read_page(filter="interactive") keeps the lines with these (and their ancestors' nothing).
INTERACTIVE_ROLES = frozenset(
    {
        "button",
        "checkbox",
        "combobox",
        "link",
        "listbox",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
        "radio",
        "searchbox",
        "slider",
        "spinbutton",
        "switch",
        "tab",
        "textbox",
        "treeitem",
    }
)


REF_IN_LINE = re.compile(r"\[ref=([a-z0-9]+)\]")


REF_MARK = re.compile(r" ?\[ref=[a-z0-9]+\]")


ROLE_OF_LINE = re.compile(r"^\s*- ([a-z]+)")


# xdotool-style names the model uses, mapped to Playwright's key names.
KEY_ALIASES = {
    "return": "Enter",
    "enter": "Enter",
    "backspace": "Backspace",
    "tab": "Tab",
    "escape": "Escape",
    "esc": "Escape",
    "space": "Space",
    "delete": "Delete",
    "del": "Delete",
    "insert": "Insert",
    "home": "Home",
    "end": "End",
    "page_up": "PageUp",
    "pageup": "PageUp",
    "prior": "PageUp",
    "page_down": "PageDown",
    "pagedown": "PageDown",
    "next": "PageDown",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "ctrl": "Control",
    "control": "Control",
    "control_l": "Control",
    "shift": "Shift",
    "shift_l": "Shift",
    "alt": "Alt",
    "alt_l": "Alt",
    "option": "Alt",
    "cmd": "Meta",
    "command": "Meta",
    "meta": "Meta",
    "super": "Meta",
    "win": "Meta",
}


MODIFIER_KEYS = frozenset({"Control", "Shift", "Alt", "Meta"})


def fingerprint_of(url: str, snapshot: str) -> str:
    """A short hash of a page's URL and accessibility snapshot, its `[ref=…]` numbering left out."""
    return hashlib.sha256(f"{url}\n{REF_MARK.sub('', snapshot)}".encode()).hexdigest()[:16]


def normalize_ref(ref: str) -> str:
    """Playwright's ref (`e12`, `f1e3`) from what the model wrote: `e12`, `ref_e12`, `ref=e12`, `[ref=e12]`."""
    ref = ref.strip().strip("[]")
    for prefix in ("ref=", "ref_", "ref-"):
        if ref.startswith(prefix):
            ref = ref[len(prefix) :]
    if ref.isdigit():  # "ref_7" in the tool's own examples
        ref = f"e{ref}"
    return ref


def line_role(line: str) -> str | None:
    match = ROLE_OF_LINE.match(line)
    return match.group(1) if match else None


def rank_snapshot_lines(snapshot: str, query: str) -> list[str]:
    """Snapshot lines with a ref that share words with `query`, best first; a role word ("button") counts too."""
    words = [word for word in re.findall(r"[\w-]+", query.lower()) if len(word) > 1]
    scored: list[tuple[int, int, str]] = []
    for index, line in enumerate(snapshot.splitlines()):
        if not REF_IN_LINE.search(line):
            continue
        lowered = line.lower()
        score = sum(2 if f'"{word}' in lowered or f" {word}" in lowered else 1 for word in words if word in lowered)
        if score:
            scored.append((-score, index, line.strip()))
    return [line for _, _, line in sorted(scored)]


def playwright_key_chord(chord: str) -> str:
    """`ctrl+shift+Return` → `Control+Shift+Enter`; single characters pass through."""
    return "+".join(playwright_key(part) for part in chord.split("+") if part)


def playwright_key(name: str) -> str:
    if len(name) == 1:
        return name
    return KEY_ALIASES.get(name.lower(), name)


def parse_chord(modifiers: str) -> list[str]:
    keys = [playwright_key(part) for part in re.split(r"[+\s]+", modifiers) if part]
    unknown = [key for key in keys if key not in MODIFIER_KEYS]
    if unknown:
        raise ToolError(f"Not a modifier key: {', '.join(unknown)} (use shift, ctrl, alt or cmd).")
    return keys


def as_bool(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on", "checked")
    return bool(value)


def value_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
