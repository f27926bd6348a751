"""The rule-based scorer: a finished suite run checked against its task's reference (exact and must-include answers
against the output and data, the final URL, the page texts the worker read for program checks), with fuzzy answers
put to the judge model as one short question billed as judge usage; the score is stored beside the judgment."""

import json
import logging
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.utils import timezone

from agent_platform.llm import ModelUnavailable
from judge import prompts
from judge.judging import answer_of as reply_answer
from judge.judging import ask_for_answer, final_view, verdict_params
from runs import spending
from runs.models import Run

from .models import BatchRun, RuleScore, SuiteTask

log = logging.getLogger(__name__)

# WebArena writes alternatives inside one reference string with this separator.
ALTERNATIVES = " |OR| "
FUZZY_TOOL = "record_match"
FUZZY_MAX_TOKENS = 1024
FUZZY_SYSTEM = f"""\
{prompts.JUDGE_FIRST_LINE}

Here you answer one short question: does the agent's answer carry the same information as the reference answers? \
Wording, order and formatting do not matter; a missing or different fact does. When the reference is "N/A", the task \
cannot be done, and the answer matches only if it says so. Give your answer once, in the requested shape: same, \
reason."""
FUZZY_TOOL_DEFINITION = {
    "name": FUZZY_TOOL,
    "description": "Record whether the answer matches the reference. Call it exactly once.",
    "strict": True,
    "input_schema": {
        "type": "object",
        "properties": {"same": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["same", "reason"],
        "additionalProperties": False,
    },
}


def reference_metadata(task: SuiteTask) -> dict[str, Any]:
    """What the worker needs to read before the browser closes: the program checks' pages and locators."""
    checks = task.reference.get("program_html") or []
    if not checks:
        return {}
    return {"reference_locators": [{"url": check["url"], "locator": check["locator"]} for check in checks]}


def normalized(text: object) -> str:
    """WebArena's cleaning: case, surrounding space and quotes do not count."""
    value = str(text).strip().lower()
    return re.sub(r"\s+", " ", value.strip("\"'` .")).strip()


def agent_answer(run: Run) -> tuple[str, list[str]]:
    """The agent's answer as one text (output, then data as JSON) and its candidate values (output, every leaf)."""
    leaves: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif value is not None:
            leaves.append(str(value))

    walk(run.data)
    text = run.output or ""
    if run.data is not None:
        text += "\n" + json.dumps(run.data, ensure_ascii=False)
    return text, [run.output or "", *leaves]


def includes(text: str, wanted: str) -> bool:
    haystack = normalized(text)
    return any(normalized(option) in haystack for option in wanted.split(ALTERNATIVES))


def exact(candidates: list[str], wanted: str) -> bool:
    options = {normalized(option) for option in wanted.split(ALTERNATIVES)}
    return any(normalized(candidate) in options for candidate in candidates)


def url_matches(final: str, reference: str) -> bool:
    """The final URL is the reference's page: same host and path (a trailing slash aside), and every query parameter
    the reference names with its value."""
    for option in reference.split(ALTERNATIVES):
        want, got = urlsplit(option.strip()), urlsplit(final.strip())
        if (want.hostname, want.port) != (got.hostname, got.port):
            continue
        if want.path.rstrip("/") != got.path.rstrip("/"):
            continue
        have = parse_qs(got.query)
        if all(set(values) <= set(have.get(key, [])) for key, values in parse_qs(want.query).items()):
            return True
    return False


def fuzzy_question(run: Run, answer: str, references: list[str] | str) -> tuple[bool | None, str]:
    """One short question to the judge model, billed as judge usage: None when it could not answer."""
    reference = references if isinstance(references, str) else "\n".join(f"- {item}" for item in references)
    text = f"# Task\n{run.task}\n\n# Reference answers\n{reference}\n\n# The agent's answer\n{answer or '(empty)'}"
    params = verdict_params(
        settings.JUDGE_MODEL,
        system=FUZZY_SYSTEM,
        text=text,
        extra=[],
        tool=FUZZY_TOOL_DEFINITION,
        max_tokens=FUZZY_MAX_TOKENS,
    )

    def parse(message: Any) -> tuple[dict[str, Any] | None, str]:
        value, problem = reply_answer(message, FUZZY_TOOL)
        if value is not None and not isinstance(value.get("same"), bool):
            return None, "same is missing or not a boolean"
        return value, problem

    try:
        reading = ask_for_answer(run, params, FUZZY_TOOL, parse)
    except (ModelUnavailable, spending.CostCapReached) as error:
        return None, f"the judge model could not answer: {error}"
    if reading.answer is None:
        return None, f"the judge's answer was unusable: {reading.problem}"
    return reading.answer["same"], str(reading.answer.get("reason", ""))


def checks_of(run: Run, reference: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rule the reference gives, checked: [{type, passed, expected, found}] (passed None: undecided)."""
    text, candidates = agent_answer(run)
    checks: list[dict[str, Any]] = []
    if "exact_match" in reference:
        wanted = reference["exact_match"]
        checks.append({"type": "exact_match", "passed": exact(candidates, wanted), "expected": wanted})
    for wanted in reference.get("must_include") or []:
        checks.append({"type": "must_include", "passed": includes(text, wanted), "expected": wanted})
    fuzzy = reference.get("fuzzy_match")
    if fuzzy:
        passed, why = fuzzy_question(run, text, fuzzy)
        checks.append({"type": "fuzzy_match", "passed": passed, "expected": fuzzy, "found": why})
    view = final_view(run) or {}
    if reference.get("reference_url"):
        found = str(view.get("url") or "")
        matched = url_matches(found, reference["reference_url"]) if found else False
        checks.append({"type": "url_match", "passed": matched, "expected": reference["reference_url"], "found": found})
    texts = view.get("reference_texts") or []
    for index, program in enumerate(reference.get("program_html") or []):
        read = texts[index] if index < len(texts) else None
        check: dict[str, Any] = {"type": "program_html", "locator": program["locator"], "url": program["url"]}
        if read is None:
            checks.append({**check, "passed": False, "found": None, "expected": "a readable page text"})
            continue
        passed = True
        if "exact_match" in program:
            passed = exact([read], program["exact_match"])
        for wanted in program.get("must_include") or []:
            passed = passed and includes(read, wanted)
        expected = program.get("exact_match", program.get("must_include"))
        checks.append({**check, "passed": passed, "expected": expected, "found": read[:500]})
    return checks


def overall(checks: list[dict[str, Any]]) -> bool | None:
    """Every rule must hold (WebArena multiplies its scores); undecided when none applies or one could not be
    decided and none failed."""
    if not checks:
        return None
    if any(check["passed"] is False for check in checks):
        return False
    if any(check["passed"] is None for check in checks):
        return None
    return True


def score_run(run: Run) -> RuleScore | None:
    """Score a finished suite run against its task's reference and store it (again, replacing the last score)."""
    item = BatchRun.objects.filter(run=run).select_related("task__suite_task").first()
    suite_task = item.task.suite_task if item is not None else None
    if suite_task is None or not run.is_finished:
        return None
    checks = checks_of(run, suite_task.reference or {})
    score, _ = RuleScore.objects.update_or_create(
        run=run, defaults={"passed": overall(checks), "checks": checks, "scored_at": timezone.now()}
    )
    return score
