"""The judge: one model reading of a finished run (task, judge_context, verdict, trajectory, final page) stored as a
Judgment and announced as run.judged; it never changes the run's status or verdict."""

import base64
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from agent_platform import telemetry
from agent_platform.lib.text import IMAGE_PLACEHOLDER, content_text, json_text
from agent_platform.llm import ModelUnavailable, model_profile
from runs import spending
from runs.events import emit
from runs.files import describe
from runs.models import Event, Run
from runs.screenshots import read_screenshot
from runs.usage import create_message

from . import prompts
from .models import Judgment

log = logging.getLogger(__name__)

JUDGE_MAX_TOKENS = 4096  # room for the thinking today's models do by default
TOOL_RESULT_CHARS = 300
FINAL_VIEW_CHARS = 8000
JUDGE_TRAJECTORY_CHARS = 24000
VERDICTS = {choice.value for choice in Judgment.Verdict}
STANDARD, KEY_POINTS = "standard", "key_points"
MODES = (STANDARD, KEY_POINTS)
KEY_POINTS_MAX_TOKENS = 2048
# The screenshots a key-points judgment reads: the last few the agent was shown, the final one always among them.
CHOSEN_SCREENSHOTS = 4

# Reads a reply of the Messages API (the SDK's message object): the answer object, or None and why there is none.
ParseAnswer = Callable[[Any], tuple[dict[str, Any] | None, str]]


# --- what the judge and the grader read ------------------------------------------------------------------------


def text_of(value: Any) -> str:
    """The text of an event field that may be a string, a list of content blocks, or anything JSON."""
    return content_text(value, image=IMAGE_PLACEHOLDER, other=json_text, skip_empty=True)


def shorten_tool_result(text: str, limit: int = TOOL_RESULT_CHARS) -> str:
    """The start of a tool's output, with every [notice] line kept: notices are what the runtime told the agent."""
    lines = text.splitlines()
    notices = [line for line in lines if line.lstrip().startswith("[notice]")]
    body = "\n".join(line for line in lines if not line.lstrip().startswith("[notice]")).strip()
    if len(body) > limit:
        body = body[:limit].rstrip() + f" …[{len(body) - limit} more chars]"
    return "\n".join([body, *notices]).strip()


def _trajectory_line(event: Event) -> str | None:
    data = event.payload or {}
    if event.type == "agent.message":
        text = text_of(data.get("text") if "text" in data else data.get("content")).strip()
        return f"agent: {text}" if text else None
    if event.type == "agent.tool_use":
        tool_input = json.dumps(data.get("input", {}), ensure_ascii=False, default=str)
        if len(tool_input) > 600:
            tool_input = tool_input[:600] + "…"
        return f"tool_use {data.get('name', '?')} {tool_input}"
    if event.type == "agent.tool_result":
        text = text_of(data.get("content") if "content" in data else data.get("text"))
        # The runtime lists the notices it appended separately too; add any the content does not already carry.
        missing = [line for line in data.get("notices") or [] if isinstance(line, str) and line not in text]
        text = shorten_tool_result("\n".join([text, *missing]))
        marker = "tool_error" if data.get("is_error") else "tool_result"
        return f"{marker}: {text}" if text else marker
    if "error" in event.type or "violation" in event.type:
        message = data.get("message") or data.get("error_message") or data.get("error") or data
        return f"{event.type}: {text_of(message)[:TOOL_RESULT_CHARS]}"
    if event.type == "run.finished" and data.get("error_code"):
        return f"run ended: {data.get('error_code')}: {data.get('error_message') or ''}".strip()
    return None


def trajectory(run: Run, max_chars: int = JUDGE_TRAJECTORY_CHARS, *, evidence_only: bool = False) -> str:
    """The steps the run took, one line each; a long run keeps its start and its end, since both matter most.

    `evidence_only`: the actions and what the pages answered, without the agent's messages, its done call (claim and
    output) and the run's ending."""
    lines = [f"{index}. {line}" for index, line in enumerate(_lines(run, evidence_only=evidence_only), start=1)]
    if sum(len(line) + 1 for line in lines) <= max_chars:
        return "\n".join(lines) or "(no steps recorded)"
    head: list[str] = []
    tail: list[str] = []
    used = 0
    half = max_chars // 2
    for line in lines:
        if used + len(line) + 1 > half:
            break
        head.append(line)
        used += len(line) + 1
    used = 0
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > half:
            break
        tail.insert(0, line)
        used += len(line) + 1
    omitted = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"… {omitted} steps omitted …", *tail])


def _lines(run: Run, *, evidence_only: bool = False) -> list[str]:
    events = Event.objects.filter(run=run).exclude(type__in=["agent.usage", "agent.final_view"]).order_by("seq")
    if evidence_only:
        events = events.exclude(type__in=["agent.message", "run.finished"])
    done_ids: set[str] = set()
    lines = []
    for event in events:
        data = event.payload or {}
        if evidence_only and event.type == "agent.tool_use" and data.get("name") == "done":
            done_ids.add(str(data.get("id")))  # the agent's claim and answer: the key-points judge never reads them
            continue
        if evidence_only and event.type == "agent.tool_result" and str(data.get("tool_use_id")) in done_ids:
            continue
        line = _trajectory_line(event)
        if line:
            lines.append(line)
    return lines


def final_view(run: Run) -> dict[str, Any] | None:
    """The page as the agent last saw it: the runtime's agent.final_view, else the last screenshot it was shown."""
    event = Event.objects.filter(run=run, type="agent.final_view").order_by("-seq").first()
    if event is not None:
        return dict(event.payload or {})
    for event in Event.objects.filter(run=run, type="agent.tool_result").order_by("-seq"):
        data = event.payload or {}
        if data.get("screenshot_url"):
            return {
                "url": data.get("url", ""),
                "title": data.get("title", ""),
                "text": text_of(data.get("content") if "content" in data else data.get("text")),
                "screenshot_url": data["screenshot_url"],
            }
    return None


def final_view_text(view: dict[str, Any] | None, limit: int = FINAL_VIEW_CHARS) -> str:
    if not view:
        return "(the runtime recorded no final page)"
    text = text_of(view.get("text")).strip() or "(no text)"
    if len(text) > limit:
        text = text[:limit] + f" …[{len(text) - limit} more chars]"
    return f"URL: {view.get('url') or '?'}\nTitle: {view.get('title') or '?'}\n\n{text}"


def latest_verdict(run: Run) -> dict[str, Any]:
    """The agent's verdict: the run's recorded one once it finished, else its last accepted done call."""
    if run.is_finished:
        return {
            "status": run.status,
            "success": run.success,
            "output": run.output,
            "data": run.data,
            "error_code": run.error_code or None,
            "error_message": run.error_message or None,
        }
    done = Event.objects.filter(run=run, type="agent.tool_use", payload__name="done").order_by("-seq").first()
    tool_input = (done.payload or {}).get("input", {}) if done else {}
    return {
        "status": run.status,
        "success": tool_input.get("success"),
        "output": tool_input.get("output", ""),
        "data": tool_input.get("data"),
        "error_code": None,
        "error_message": None,
    }


def verdict_text(verdict: dict[str, Any]) -> str:
    data = json.dumps(verdict.get("data"), ensure_ascii=False, indent=1) if verdict.get("data") is not None else "none"
    lines = [
        f"Status: {verdict.get('status')}",
        f"success: {json.dumps(verdict.get('success'))}",
        f"Error code: {verdict.get('error_code') or 'none'}",
    ]
    if verdict.get("error_message"):
        lines.append(f"Error message: {verdict['error_message']}")
    lines += [f"Output:\n{verdict.get('output') or '(empty)'}", f"Data:\n{data}"]
    return "\n".join(lines)


def supports_vision(model: str) -> bool:
    """Whether the model takes images, as its profile says; an unknown model gets none, since an image sent to a
    text-only model fails the whole request."""
    profile = model_profile(model)
    return bool(profile is not None and profile.image_input)


def structured_outputs(model: str) -> bool:
    profile = model_profile(model)
    return bool(profile is not None and profile.structured_outputs)


def viewport_image_block(view: dict[str, Any] | None) -> dict[str, Any] | None:
    return image_block((view or {}).get("screenshot_url"))


def image_block(url: str | None) -> dict[str, Any] | None:
    if not url:
        return None
    try:
        png = read_screenshot(url)
    except (OSError, ValueError):
        log.warning("final viewport %s could not be read", url)
        return None
    if not png:
        return None
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()},
    }


def verdict_params(
    model: str, *, system: str, text: str, extra: list[dict[str, Any]], tool: dict[str, Any], max_tokens: int
) -> dict[str, Any]:
    """A judge's or grader's request. Its answer comes as structured output (the reply's text constrained to the
    tool's schema) on a model that supports it, else as a call of the strict tool under tool_choice auto: no
    request forces a tool, which today's models refuse."""
    params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "system": system}
    if structured_outputs(model):
        params["output_config"] = {"format": {"type": "json_schema", "schema": tool["input_schema"]}}
        how = prompts.JSON_ANSWER
    else:
        params["tools"] = [tool]
        params["tool_choice"] = {"type": "auto"}
        how = prompts.TOOL_ANSWER.format(tool=tool["name"])
    content = [{"type": "text", "text": f"{text}\n\n{how}"}, *extra]
    params["messages"] = [{"role": "user", "content": content}]
    return params


def answer_of(message: Any, tool: str) -> tuple[dict[str, Any] | None, str]:
    """The answer object: the tool's input, or the JSON object of the reply's text; or None and why there is none."""
    for block in message.content or []:
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == tool:
            if isinstance(block.input, dict):
                return block.input, ""
            return None, f"the {tool} input was not an object"
    if getattr(message, "stop_reason", None) == "refusal":
        return None, "the model declined to answer"
    text = "".join(block.text for block in message.content or [] if getattr(block, "type", None) == "text").strip()
    try:
        answer = json.loads(text) if text else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return None, f"the answer was neither a JSON object nor a {tool} call"
    return answer, ""


# --- the judge ---------------------------------------------------------------------------------------------------


def judge_request(run: Run, judge_context: list[str], model: str) -> dict[str, Any]:
    """The Messages request: judge_context first (weighed before everything), then the task, verdict, steps, page."""
    view = final_view(run)
    context = "\n".join(f"- {statement}" for statement in judge_context) or "(none)"
    sections = [
        f"# Judge context (weigh these before everything else)\n{context}",
        f"# Task\n{run.task}" + (f"\nStart URL: {run.start_url}" if run.start_url else ""),
        f"# The agent's verdict\n{verdict_text(latest_verdict(run))}",
        f"# Steps the run took\n{trajectory(run)}",
    ]
    downloaded = list(run.downloaded_files.all())
    if downloaded:
        # a deliverable may be a file ("download the invoice"): the judge knows what arrived, by name, size and type
        sections.append(f"# Files the run downloaded\n{describe(downloaded)}")
    sections.append(f"# The final page as the agent last saw it\n{final_view_text(view)}")
    image = viewport_image_block(view) if supports_vision(model) else None
    extra = [] if image is None else [{"type": "text", "text": "The final viewport as the agent last saw it:"}, image]
    return verdict_params(
        model,
        system=prompts.JUDGE_SYSTEM,
        text="\n\n".join(sections),
        extra=extra,
        tool=prompts.JUDGE_TOOL_DEFINITION,
        max_tokens=JUDGE_MAX_TOKENS,
    )


def key_points_request(run: Run, model: str) -> dict[str, Any]:
    """The first key-points request: the task alone, before anything the run did."""
    task = f"# Task\n{run.task}" + (f"\nStart URL: {run.start_url}" if run.start_url else "")
    return verdict_params(
        model,
        system=prompts.KEY_POINTS_SYSTEM,
        text=task,
        extra=[],
        tool=prompts.KEY_POINTS_TOOL_DEFINITION,
        max_tokens=KEY_POINTS_MAX_TOKENS,
    )


def parse_key_points(message: Any) -> tuple[dict[str, Any] | None, str]:
    answer, problem = answer_of(message, prompts.KEY_POINTS_TOOL)
    if answer is None:
        return None, problem
    points = answer.get("key_points")
    if not isinstance(points, list) or not points or not all(isinstance(p, str) and p.strip() for p in points):
        return None, "key_points is not a non-empty list of statements"
    return answer, ""


def chosen_screenshots(run: Run, view: dict[str, Any] | None) -> list[str]:
    """The screenshots the key-points judge reads: the last CHOSEN_SCREENSHOTS the run took, the final view's last."""
    urls = [
        url
        for url in Event.objects.filter(run=run, type="agent.tool_result")
        .order_by("seq")
        .values_list("payload__screenshot_url", flat=True)
        if isinstance(url, str) and url
    ]
    final = (view or {}).get("screenshot_url")
    if final:
        urls = [url for url in urls if url != final] + [final]
    return urls[-CHOSEN_SCREENSHOTS:]


def evidence_request(run: Run, judge_context: list[str], key_points: list[str], model: str) -> dict[str, Any]:
    """The second key-points request: the key points, then only the evidence (actions, pages, screenshots); the
    agent's verdict, output, data and messages are left out."""
    view = final_view(run)
    context = "\n".join(f"- {statement}" for statement in judge_context) or "(none)"
    points = "\n".join(f"{index}. {point}" for index, point in enumerate(key_points, start=1))
    sections = [
        f"# Judge context (weigh these before everything else)\n{context}",
        f"# Task\n{run.task}" + (f"\nStart URL: {run.start_url}" if run.start_url else ""),
        f"# Key points the run must meet\n{points}",
        f"# Actions the run took and what the pages answered\n{trajectory(run, evidence_only=True)}",
        f"# The final page\n{final_view_text(view)}",
    ]
    extra: list[dict[str, Any]] = []
    if supports_vision(model):
        for number, url in enumerate(chosen_screenshots(run, view), start=1):
            block = image_block(url)
            if block is not None:
                extra += [{"type": "text", "text": f"Screenshot {number} (in the order taken; the last is final):"}]
                extra.append(block)
    return verdict_params(
        model,
        system=prompts.KEY_POINTS_JUDGE_SYSTEM,
        text="\n\n".join(sections),
        extra=extra,
        tool=prompts.JUDGE_TOOL_DEFINITION,
        max_tokens=JUDGE_MAX_TOKENS,
    )


def mode_of(run: Run, mode: str | None) -> str:
    """The judge mode asked for, else the one the run was launched with (its metadata's judge_mode), else standard."""
    chosen = mode or (run.metadata or {}).get("judge_mode")
    return chosen if chosen in MODES else STANDARD


def read_with_key_points(run: Run, context: list[str], model: str) -> tuple[dict[str, Any], list[str]]:
    """The key points first (from the task alone), then the verdict from the evidence."""
    points = ask_for_answer(run, key_points_request(run, model), prompts.KEY_POINTS_TOOL, parse_key_points)
    if points.answer is None:
        reason = f"The judge's key points could not be parsed, twice ({points.problem}), so the verdict is uncertain."
        return uncertain(reason), []
    key_points = [point.strip() for point in points.answer["key_points"]]
    params = evidence_request(run, context, key_points, model)
    reading = ask_for_answer(run, params, prompts.JUDGE_TOOL, parse_judgment)
    answer = reading.answer or uncertain(
        f"The judge's answer could not be parsed, twice ({reading.problem}), so the verdict is uncertain."
    )
    return answer, key_points


def parse_judgment(message: Any) -> tuple[dict[str, Any] | None, str]:
    answer, problem = answer_of(message, prompts.JUDGE_TOOL)
    if answer is None:
        return None, problem
    if answer.get("verdict") not in VERDICTS:
        return None, f"verdict {answer.get('verdict')!r} is not pass, fail or uncertain"
    if not isinstance(answer.get("reason"), str) or not answer["reason"].strip():
        return None, "reason is missing or not a string"
    for flag in ("blocked", "impossible"):
        if not isinstance(answer.get(flag), bool):
            return None, f"{flag} is missing or not a boolean"
    return answer, ""


def with_retry_note(params: dict[str, Any], problem: str, tool: str) -> dict[str, Any]:
    how = prompts.TOOL_ANSWER.format(tool=tool) if "tools" in params else prompts.JSON_ANSWER
    note = {"type": "text", "text": prompts.RETRY_NOTE.format(problem=problem, how=how)}
    message = params["messages"][0]
    return {**params, "messages": [{**message, "content": [*message["content"], note]}]}


@dataclass(frozen=True)
class Reading:
    """What asking the judge or the grader gave: its answer (None when it was unusable twice), why the last one was
    unusable, and every reply received (their usage is the cycle's)."""

    answer: dict[str, Any] | None
    problem: str
    replies: tuple[Any, ...]


def ask_for_answer(run: Run, params: dict[str, Any], tool: str, parse: ParseAnswer, asker: str = "judge") -> Reading:
    """Ask once, and once more if the answer is unusable. ModelUnavailable propagates: the SDK already retried.
    Each request must fit the run's cost cap first: spending.CostCapReached propagates when one would cross it,
    with the answers received so far lost to the caller (a first request is never sent then)."""
    received: list[Any] = []
    answer, problem = None, ""
    for attempt in range(2):
        request = params if attempt == 0 else with_retry_note(params, problem, tool)
        what = (
            f"The {asker}'s request"
            if attempt == 0
            else f"The {asker}'s second request (its first answer was unusable)"
        )
        spending.ensure_within_cap(run, request, what)
        message = create_message(run, source="judge", **request)
        received.append(message)
        answer, problem = parse(message)
        if answer is not None:
            break
        log.warning("%s answer for %s unusable (attempt %d): %s", tool, run.public_id, attempt + 1, problem)
    return Reading(answer, problem, tuple(received))


def uncertain(reason: str) -> dict[str, Any]:
    """A judgment the judge could not give: uncertain, with the reason an operator reads."""
    return {"verdict": Judgment.Verdict.UNCERTAIN, "reason": reason, "blocked": False, "impossible": False}


def judge(
    run: Run,
    *,
    judge_context: list[str] | None = None,
    requested_by: User | None = None,
    model: str | None = None,
    mode: str | None = None,
) -> Judgment:
    """Judge `run` once (with the run's own judge_context unless one is given), store and announce the Judgment.

    An unusable answer is asked again once, then stored as uncertain. A model that cannot answer (the SDK's
    retries exhausted) is stored as uncertain too, rather than retried by Celery: the SDK has already retried
    with backoff, and an operator can re-judge.
    """
    context = list(run.judge_context or []) if judge_context is None else list(judge_context)
    model = model or settings.JUDGE_MODEL
    mode = mode_of(run, mode)
    key_points: list[str] = []
    # In the run's trace when the judge's message carries it (a judgment queued by the run's ending), with the
    # judge's requests as its children.
    with telemetry.span("judge", {"pilothouse.run.id": run.public_id, telemetry.REQUEST_MODEL: model}) as traced:
        try:
            if mode == KEY_POINTS:
                answer, key_points = read_with_key_points(run, context, model)
            else:
                reading = ask_for_answer(run, judge_request(run, context, model), prompts.JUDGE_TOOL, parse_judgment)
                answer = reading.answer or uncertain(
                    f"The judge's answer could not be parsed, twice ({reading.problem}), so the verdict is uncertain."
                )
        except ModelUnavailable as error:
            answer = uncertain(f"The judge model was unavailable, so the run was not judged: {error}")
        except spending.CostCapReached as error:
            answer = uncertain(f"The run was not judged: {error}")
        traced.set_attribute("pilothouse.judgment.verdict", answer["verdict"])
    judgment = Judgment.objects.create(
        run=run,
        verdict=answer["verdict"],
        reason=answer["reason"].strip(),
        blocked=answer["blocked"],
        impossible=answer["impossible"],
        judge_context=context,
        model=model,
        mode=mode,
        key_points=key_points,
        requested_by=requested_by,
        judged_at=timezone.now(),
    )
    emit(run, "run.judged", {**judgment.as_dict(), "judgment_id": judgment.pk})
    return judgment
