"""Importing a suite: WebVoyager, Online-Mind2Web, WebArena or our own JSONL read into one Suite and its tasks, in one
transaction, with a refusal naming the line and the field that is wrong; and retiring a live-site task."""

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from agent_platform.errors import InvalidRequest, ServiceError
from agent_platform.models import Workspace
from judge.services import clean_judge_context
from runs.launch_rules import clean_output_schema, clean_start_url

from .models import JudgeMode, Suite, SuiteTask

SUITE_FILE_MAX_BYTES = 8 * 1024 * 1024
SUITE_TASKS_LIMIT = 2000
NAME_MAX_CHARS = 200
EXTERNAL_ID_MAX_CHARS = 200
# WebArena's site placeholders look like __SHOPPING__ or __SHOPPING_ADMIN__.
PLACEHOLDER = re.compile(r"__([A-Z][A-Z0-9_]*?)__")
# Online-Mind2Web's levels by the length of the human reference trajectory (the paper's thresholds).
MIND2WEB_LEVELS = ((5, "easy"), (10, "medium"))
FORMATS = {choice.value for choice in Suite.Format}


@dataclass
class ParsedTask:
    line: int
    external_id: str
    intent: str
    start_url: str = ""
    website: str = ""
    level: str = ""
    reference: dict[str, Any] = field(default_factory=dict)
    output_schema: Any = None
    judge_context: list[str] = field(default_factory=list)
    expected: Any = None


@dataclass(frozen=True)
class Skipped:
    line: int
    external_id: str
    reason: str


@dataclass(frozen=True)
class Imported:
    suite: Suite
    skipped: list[Skipped]


def wrong(line: int, name: str, message: str) -> InvalidRequest:
    """The refusal of a malformed file: the line and the field that is wrong."""
    return InvalidRequest.of_field(f"line {line}.{name}", message, detail={"line": line, "field": name})


# --- reading the file's objects ------------------------------------------------------------------------------------


def objects_of(text: str) -> Iterator[tuple[int, Any]]:
    """Each object of a JSON array, a single JSON object, or JSON Lines, with the line it starts on."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        yield from array_items(text)
        return
    decoder = json.JSONDecoder()
    if stripped.startswith("{"):
        start = len(text) - len(stripped)
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            value, end = None, -1
        if end >= 0 and not text[end:].strip():
            yield line_of(text, start), value
            return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as error:
            raise wrong(number, "json", f"is not JSON: {error}") from None


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def array_items(text: str) -> Iterator[tuple[int, Any]]:
    """The items of a JSON array with the line each starts on (json.loads would lose where an item was)."""
    decoder = json.JSONDecoder()
    index = text.index("[") + 1
    length = len(text)

    def skip_space(at: int) -> int:
        while at < length and text[at] in " \t\r\n":
            at += 1
        return at

    index = skip_space(index)
    if index < length and text[index] == "]":
        return
    while True:
        index = skip_space(index)
        try:
            value, end = decoder.raw_decode(text, index)
        except ValueError as error:
            raise wrong(line_of(text, index), "json", f"is not JSON: {error}") from None
        yield line_of(text, index), value
        index = skip_space(end)
        if index < length and text[index] == ",":
            index += 1
            continue
        if index < length and text[index] == "]" and not text[index + 1 :].strip():
            return
        raise wrong(line_of(text, index), "json", "expected ',' or the array's closing ']'")


# --- the formats ---------------------------------------------------------------------------------------------------


def text_field(item: dict[str, Any], line: int, name: str, *, required: bool = True) -> str:
    value = item.get(name)
    if value is None or value == "":
        if required:
            raise wrong(line, name, "is required")
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise wrong(line, name, "must be a string")
    return str(value).strip()


def string_list(value: Any, line: int, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        raise wrong(line, name, "must be a string or a list of strings")
    return list(value)


def webvoyager_task(item: dict[str, Any], line: int) -> ParsedTask:
    """{web_name, id, ques, web}; a reference answer may come inline as `answer` (or `reference_answer`)."""
    answer = item.get("answer", item.get("reference_answer"))
    if answer is not None and not isinstance(answer, str):
        raise wrong(line, "answer", "must be a string")
    return ParsedTask(
        line=line,
        external_id=text_field(item, line, "id"),
        intent=text_field(item, line, "ques"),
        start_url=text_field(item, line, "web"),
        website=text_field(item, line, "web_name", required=False),
        reference={"answer": answer} if answer else {},
    )


def mind2web_level(value: Any, line: int) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise wrong(line, "reference_length", "must be a whole number of steps")
    for limit, level in MIND2WEB_LEVELS:
        if value <= limit:
            return level
    return "hard"


def mind2web_task(item: dict[str, Any], line: int) -> ParsedTask:
    """{task_id, website, task_description, reference_length}: the level follows the reference length."""
    level = item.get("level")
    if level is not None and not isinstance(level, str):
        raise wrong(line, "level", "must be a string")
    return ParsedTask(
        line=line,
        external_id=text_field(item, line, "task_id"),
        intent=text_field(item, line, "task_description"),
        start_url=text_field(item, line, "website"),
        website=text_field(item, line, "website"),
        level=level or mind2web_level(item.get("reference_length"), line),
    )


def webarena_task(item: dict[str, Any], line: int) -> ParsedTask:
    """A config file: intent, start_url with site placeholders, and eval{eval_types, reference_answers,
    reference_url, program_html}."""
    evaluation = item.get("eval") or {}
    if not isinstance(evaluation, dict):
        raise wrong(line, "eval", "must be an object")
    types = string_list(evaluation.get("eval_types"), line, "eval.eval_types")
    known = {"string_match", "url_match", "program_html"}
    for name in types:
        if name not in known:
            raise wrong(line, "eval.eval_types", f"{name!r} is not string_match, url_match or program_html")
    answers = evaluation.get("reference_answers") or {}
    if not isinstance(answers, dict):
        raise wrong(line, "eval.reference_answers", "must be an object")
    exact = answers.get("exact_match")
    if exact is not None and not isinstance(exact, str | int | float):
        raise wrong(line, "eval.reference_answers.exact_match", "must be a string")
    fuzzy = answers.get("fuzzy_match")
    reference: dict[str, Any] = {"eval_types": types}
    if exact is not None:
        reference["exact_match"] = str(exact)
    must = string_list(answers.get("must_include"), line, "eval.reference_answers.must_include")
    if must:
        reference["must_include"] = must
    if fuzzy == "N/A":
        reference["fuzzy_match"] = "N/A"
    elif fuzzy is not None:
        reference["fuzzy_match"] = string_list(fuzzy, line, "eval.reference_answers.fuzzy_match")
    url = evaluation.get("reference_url")
    if url:
        if not isinstance(url, str):
            raise wrong(line, "eval.reference_url", "must be a string")
        reference["reference_url"] = url
    checks = evaluation.get("program_html") or []
    if not isinstance(checks, list):
        raise wrong(line, "eval.program_html", "must be a list")
    programs = []
    for index, check in enumerate(checks):
        name = f"eval.program_html[{index}]"
        if not isinstance(check, dict):
            raise wrong(line, name, "must be an object {url, locator, required_contents}")
        contents = check.get("required_contents") or {}
        if not isinstance(contents, dict) or not ({"exact_match", "must_include"} & set(contents)):
            raise wrong(line, f"{name}.required_contents", "must give exact_match or must_include")
        program: dict[str, Any] = {
            "url": text_field(check, line, "url", required=False) or "last",
            "locator": text_field(check, line, "locator", required=False),
        }
        if "exact_match" in contents:
            program["exact_match"] = str(contents["exact_match"])
        if "must_include" in contents:
            program["must_include"] = string_list(contents["must_include"], line, f"{name}.required_contents")
        programs.append(program)
    if programs:
        reference["program_html"] = programs
    sites = item.get("sites")
    return ParsedTask(
        line=line,
        external_id=text_field(item, line, "task_id"),
        intent=text_field(item, line, "intent"),
        start_url=text_field(item, line, "start_url"),
        website=", ".join(sites) if isinstance(sites, list) and all(isinstance(s, str) for s in sites) else "",
        level=text_field(item, line, "level", required=False),
        reference=reference,
    )


def jsonl_task(item: dict[str, Any], line: int) -> ParsedTask:
    """Our own JSONL, as a batch's suite file: {task, start_url, output_schema, judge_context, expected}, with an
    optional external_id (the line number otherwise) and level."""
    allowed = {"task", "start_url", "output_schema", "judge_context", "expected", "external_id", "level"}
    unknown = sorted(set(item) - allowed)
    if unknown:
        raise wrong(line, unknown[0], "is not a field of a task (" + ", ".join(sorted(allowed)) + ")")
    try:
        output_schema = clean_output_schema(item.get("output_schema"))
        judge_context = clean_judge_context(item.get("judge_context"))
    except ServiceError as error:
        raise wrong(line, error.field or "task", error.message) from None
    return ParsedTask(
        line=line,
        external_id=text_field(item, line, "external_id", required=False) or str(line),
        intent=text_field(item, line, "task"),
        start_url=text_field(item, line, "start_url", required=False),
        level=text_field(item, line, "level", required=False),
        output_schema=output_schema,
        judge_context=judge_context,
        expected=item.get("expected"),
    )


READERS = {
    Suite.Format.WEBVOYAGER: webvoyager_task,
    Suite.Format.ONLINE_MIND2WEB: mind2web_task,
    Suite.Format.WEBARENA: webarena_task,
    Suite.Format.JSONL: jsonl_task,
}


def parse(format: str, content: str) -> list[ParsedTask]:
    """Every task of the file, or InvalidRequest naming the first wrong line and field."""
    reader = READERS[Suite.Format(format)]
    tasks = []
    for line, item in objects_of(content):
        if not isinstance(item, dict):
            raise wrong(line, "task", "must be a JSON object")
        tasks.append(reader(item, line))
    if not tasks:
        raise InvalidRequest.of_field("content", "has no tasks")
    if len(tasks) > SUITE_TASKS_LIMIT:
        raise InvalidRequest.of_field("content", f"has {len(tasks)} tasks; at most {SUITE_TASKS_LIMIT} are allowed")
    return tasks


# --- placeholders --------------------------------------------------------------------------------------------------


def clean_sites(sites: object) -> dict[str, str]:
    """{"__SHOPPING__": "http://host:port", ...} (the underscores may be left out); each address an http(s) URL."""
    if sites is None:
        return {}
    if not isinstance(sites, dict):
        raise InvalidRequest.of_field("sites", "must be an object of placeholder to address")
    cleaned = {}
    for key, address in sites.items():
        name = str(key).strip().strip("_").upper()
        if not name or not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            raise InvalidRequest.of_field(f"sites.{key}", "is not a placeholder name like __SHOPPING__")
        try:
            url = clean_start_url(address)
        except ServiceError:
            raise InvalidRequest.of_field(f"sites.{key}", "must be an http:// or https:// address") from None
        if not url:
            raise InvalidRequest.of_field(f"sites.{key}", "must be an http:// or https:// address")
        cleaned[f"__{name}__"] = url.rstrip("/")
    return cleaned


def unmapped(text: str, sites: dict[str, str]) -> list[str]:
    return sorted({match.group(0) for match in PLACEHOLDER.finditer(text)} - set(sites))


def mapped(text: str, sites: dict[str, str]) -> str:
    return PLACEHOLDER.sub(lambda match: sites.get(match.group(0), match.group(0)), text)


def map_placeholders(task: ParsedTask, sites: dict[str, str]) -> str:
    """Replace the task's placeholders by the operator's addresses; returns why it must be skipped, or ""."""
    texts = [task.start_url, task.reference.get("reference_url", "")]
    texts += [check["url"] for check in task.reference.get("program_html", [])]
    missing = sorted({name for text in texts for name in unmapped(text, sites)})
    if missing:
        return "no address was given for " + ", ".join(missing)
    task.start_url = mapped(task.start_url, sites)
    if "reference_url" in task.reference:
        task.reference["reference_url"] = mapped(task.reference["reference_url"], sites)
    for check in task.reference.get("program_html", []):
        check["url"] = mapped(check["url"], sites)
    return ""


# --- the import ----------------------------------------------------------------------------------------------------


def clean_judge_mode(value: object) -> str:
    if value is None or value == "":
        return JudgeMode.STANDARD
    if value not in JudgeMode.values:
        raise InvalidRequest.of_field("judge_mode", "must be standard or key_points")
    return str(value)


def import_suite(
    workspace: Workspace,
    *,
    format: object,
    content: object,
    name: object = "",
    sites: object = None,
    judge_mode: object = None,
    created_by: User | None = None,
) -> Imported:
    """Read the file and store the suite and every task it can run, all or nothing.

    A task whose start URL (or reference URL) names a placeholder with no address is skipped with the reason; a
    duplicate id is refused. Raises InvalidRequest naming the line and field of the first wrong task.
    """
    if format not in FORMATS:
        raise InvalidRequest.of_field("format", "must be one of " + ", ".join(sorted(FORMATS)))
    if isinstance(content, bytes):
        if len(content) > SUITE_FILE_MAX_BYTES:
            raise InvalidRequest.of_field("content", f"is larger than {SUITE_FILE_MAX_BYTES} bytes")
        try:
            content = content.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InvalidRequest.of_field("content", "is not UTF-8 text") from None
    if not isinstance(content, str) or not content.strip():
        raise InvalidRequest.of_field("content", "must be the file's text")
    if len(content) > SUITE_FILE_MAX_BYTES:
        raise InvalidRequest.of_field("content", f"is larger than {SUITE_FILE_MAX_BYTES} bytes")
    if not isinstance(name, str) or len(name) > NAME_MAX_CHARS:
        raise InvalidRequest.of_field("name", f"must be a string of at most {NAME_MAX_CHARS} characters")
    mode = clean_judge_mode(judge_mode)
    addresses = clean_sites(sites)
    parsed = parse(str(format), content)

    kept, skipped, seen = [], [], set()
    for task in parsed:
        if len(task.external_id) > EXTERNAL_ID_MAX_CHARS:
            raise wrong(task.line, "id", f"is longer than {EXTERNAL_ID_MAX_CHARS} characters")
        if task.external_id in seen:
            raise wrong(task.line, "id", f"{task.external_id!r} appears twice in the file")
        seen.add(task.external_id)
        reason = map_placeholders(task, addresses)
        if reason:
            skipped.append(Skipped(task.line, task.external_id, reason))
            continue
        try:
            task.start_url = clean_start_url(task.start_url)
        except ServiceError as error:
            raise wrong(task.line, "start_url", error.message.removeprefix("start_url: ")) from None
        kept.append(task)
    if not kept:
        raise InvalidRequest.of_field(
            "content", "has no task that can run: " + "; ".join(f"{s.external_id}: {s.reason}" for s in skipped[:5])
        )

    with transaction.atomic():
        suite = Suite.objects.create(
            workspace=workspace,
            name=name.strip() or f"{format} suite",
            format=format,
            sites=addresses,
            judge_mode=mode,
            created_by=created_by,
        )
        SuiteTask.objects.bulk_create(
            SuiteTask(
                suite=suite,
                position=position,
                external_id=task.external_id,
                intent=task.intent,
                start_url=task.start_url,
                website=task.website[:200],
                level=task.level[:20],
                reference=task.reference,
                output_schema=task.output_schema,
                judge_context=task.judge_context,
                expected=task.expected,
            )
            for position, task in enumerate(kept)
        )
    return Imported(suite, skipped)


def set_stale(task: SuiteTask, stale: bool) -> SuiteTask:
    """Retire a live-site task (it is never launched again) or bring it back."""
    task.stale = stale
    task.save(update_fields=["stale"])
    return task
