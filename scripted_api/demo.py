"""The scripted demo model: plays hand-written trajectories for the bundled demo tasks so `make run` works key-less.

Each request is answered from the conversation it carries, never from server-side state, so any number of
runs (and the worker's retries) can share one scripted model. The agent's next step is a small state machine
keyed on the last browser step in the conversation. Like today's models, it thinks when thinking is on: the
short text it writes before each tool call comes back in a thinking block (shown when the request's `thinking`
asks for it). The judge and the grader answer with structured output (JSON text) when the request sets
`output_config.format`, else through their strict tool, which they are offered under `tool_choice: auto`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urljoin, urlsplit

from django.conf import settings

from agent_platform.lib.text import content_text

from .wire import Reply, WireServer, json_reply, text_reply, thinking_block, thinking_shown, tool_use_reply

JUDGE_TOOL = "record_judgment"
GRADER_TOOL = "record_evaluation"
DONE_TOOL = "done"
BROWSER_TOOLSET = "browser"

UNKNOWN_TASK_OUTPUT = "The scripted demo model only knows the bundled demo tasks; set ANTHROPIC_API_KEY to use Claude."

# What the scripted agent writes into the demo contact form.
CONTACT_VALUES = {
    "name": "Ada Lovelace",
    "email": "ada@example.com",
    "topic": "Returns and refunds",
    "message": "Hello, I would like to return the Cedar Notebook from my last order. How do I send it back?",
}

# The demo task that asks the operator (ask_human) for a code before it sends the contact form quoting it.
HUMAN_TOOL = "ask_human"
CODE_QUESTION = "What is your order's confirmation code? It is in the email the shop sent you."
ANSWER_LINE = re.compile(r"The operator answered:\n(?P<text>.+)", re.DOTALL)
SECRET_PLACEHOLDER = re.compile(r"\{\{secret:[A-Za-z0-9_]+\}\}")

START_URL_LINE = re.compile(r"^\s*Start URL:\s*(\S+)", re.MULTILINE)
ANY_URL = re.compile(r"https?://[^\s\"'<>)]+")
PRICE = re.compile(r"(?:[$€£]\s?)?(\d{1,6}(?:[.,]\d{2}))\b")
SNAPSHOT_LINE = re.compile(r'^\s*-\s+(?P<role>[a-z]+)(?:\s+"(?P<name>[^"]*)")?(?P<rest>.*)$')
SNAPSHOT_REF = re.compile(r"\[(?:ref=(?P<plain>[\w-]+)|(?P<prefixed>ref_[\w-]+))\]")
ITERATION = re.compile(r"Iteration:?\s*(\d+)", re.IGNORECASE)
VERDICT_SUCCESS_LINE = re.compile(r"^success:\s*(true|false|null)\s*$", re.MULTILINE | re.IGNORECASE)
SUCCESS_JSON = re.compile(r"\"success\"\s*:\s*(true|false)", re.IGNORECASE)
# The sections of the judge's prompt (judge.judging.judge_request) the scripted judge reads.
JUDGE_CONTEXT_SECTION = "Judge context (weigh these before everything else)"
VERDICT_SECTION = "The agent's verdict"
FINAL_PAGE_SECTION = "The final page as the agent last saw it"
SECTION_HEADING = re.compile(r"^# (?P<title>.+)$", re.MULTILINE)
# What the runtime tells the agent of a download, and of the files it was given (runtime.files).
DOWNLOADED = re.compile(r"Downloaded '(?P<name>[^']+)' \((?P<size>\d+) bytes")
GIVEN_FILE = re.compile(r"^- (?P<path>/.+?) \(\d+ bytes", re.MULTILINE)
SHA256_LINE = re.compile(r"SHA-256:\s*([0-9a-f]{64})")
QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")


# --- reading the conversation ----------------------------------------------------------------------------


@dataclass
class Step:
    """One tool call the agent made, with what came back (None while unanswered)."""

    name: str
    input: dict[str, Any]
    result: str | None
    is_error: bool


def request_text(request: dict[str, Any]) -> str:
    system = request.get("system")
    texts = [content_text(system)]
    texts += [content_text(message.get("content")) for message in request.get("messages") or []]
    return "\n".join(texts)


def conversation_steps(messages: list[dict[str, Any]]) -> list[Step]:
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if message.get("role") == "assistant" and block.get("type") == "tool_use":
                step = Step(block.get("name", ""), block.get("input") or {}, None, False)
                steps.append(step)
                by_id[block.get("id", "")] = step
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in by_id:
                step = by_id[block["tool_use_id"]]
                step.result = content_text(block.get("content"))
                step.is_error = bool(block.get("is_error"))
    return steps


def first_user_text(messages: list[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "user":
            return content_text(message.get("content"))
    return ""


def demo_root_of(base_url: str) -> str:
    """The demo site's root (`…/demo/`) on the demo site's configured address (DEMO_BASE_URL)."""
    return urljoin(base_url if base_url.endswith("/") else f"{base_url}/", "demo/")


def start_url(task_text: str, fallback_text: str = "", default_root: str = "") -> str:
    """The run's start URL as the task states it; a run without one (a follow-up) starts at the demo shop."""
    for text in (task_text, fallback_text):
        match = START_URL_LINE.search(text)
        if match:
            return match.group(1)
    match = ANY_URL.search(task_text)
    return match.group(0) if match else urljoin(default_root, "shop/")


def demo_root(url: str, default_root: str) -> str:
    """The demo site's root (`…/demo/`) on the host the run started from, else the configured one's."""
    parts = urlsplit(url)
    if not parts.netloc:
        return default_root
    path = parts.path
    root_path = path[: path.index("/demo/") + len("/demo/")] if "/demo/" in path else "/demo/"
    return f"{parts.scheme or 'http'}://{parts.netloc}{root_path}"


def sections(text: str) -> dict[str, str]:
    """The `# Heading` sections of a judge's or grader's prompt, by heading."""
    headings = list(SECTION_HEADING.finditer(text))
    return {
        heading.group("title").strip(): text[heading.end() : following.start() if following else len(text)].strip()
        for heading, following in zip(headings, [*headings[1:], None], strict=True)
    }


def judge_statements(section: str) -> list[str]:
    """The judge_context statements as the judge's prompt lists them (`- statement`, `(none)` when there are none)."""
    statements: list[str] = []
    for line in section.splitlines():
        if line.startswith("- "):
            statements.append(line[2:].strip())
        elif statements and line.strip():
            statements[-1] = f"{statements[-1]} {line.strip()}"  # a statement written over several lines
    return [statement for statement in statements if statement]


def quoted_phrases(statement: str) -> list[str]:
    return [straight or curly for straight, curly in QUOTED.findall(statement)]


def tool_named(request: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((tool for tool in request.get("tools") or [] if tool.get("name") == name), None)


def forced_tool(request: dict[str, Any]) -> str | None:
    choice = request.get("tool_choice") or {}
    return choice.get("name") if choice.get("type") == "tool" else None


# --- page parsing ------------------------------------------------------------------------------------------


def parse_products(page_text: str) -> list[dict[str, Any]]:
    """Name and price of each product listed in a page's visible text.

    A product is a line carrying a price: the name is the text before the price on that line, or the line
    above when the price stands alone (card layouts put them on separate lines).
    """
    items: list[dict[str, Any]] = []
    lines = [line.strip() for line in page_text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("[notice]")]
    for index, line in enumerate(lines):
        match = PRICE.search(line)
        if not match:
            continue
        name = line[: match.start()].strip(" -–—:|·\t")
        if not name and index > 0 and not PRICE.search(lines[index - 1]):
            name = lines[index - 1]
        try:
            price = Decimal(match.group(1).replace(",", "."))
        except InvalidOperation:
            continue
        if name and len(name) <= 120:
            items.append({"name": name, "price": price})
    return items


@dataclass
class FormControl:
    role: str
    name: str
    ref: str


def parse_controls(snapshot: str) -> list[FormControl]:
    """The elements of an aria snapshot that carry a ref: `- textbox "Your name" [ref=e12]` (or `[ref_7]`)."""
    controls = []
    for line in snapshot.splitlines():
        match = SNAPSHOT_LINE.match(line)
        ref = SNAPSHOT_REF.search(line)
        if match and ref:
            controls.append(
                FormControl(match.group("role"), match.group("name") or "", ref.group("plain") or ref.group("prefixed"))
            )
    return controls


def find_control(controls: list[FormControl], roles: set[str], *words: str, avoid: str = "") -> FormControl | None:
    for control in controls:
        label = control.name.lower()
        wanted = not words or any(word in label for word in words)
        if control.role in roles and wanted and not (avoid and avoid in label):
            return control
    return None


# --- fitting data to the run's output_schema --------------------------------------------------------------

SYNONYMS = {
    "name": ("name", "title", "product", "product_name", "label"),
    "price": ("price", "cost", "amount", "price_usd", "value"),
}


def conform(value: Any, schema: dict[str, Any] | None) -> Any:
    """Shape `value` to the bounded schema subset as far as our data allows: the demo should pass its own schema."""
    if not isinstance(schema, dict) or not schema:
        return _plain(value)
    if "enum" in schema:
        return value if value in schema["enum"] else schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return conform(value, schema[key][0])
    kind = schema.get("type")
    if kind == "object" or (kind is None and "properties" in schema):
        return _conform_object(value if isinstance(value, dict) else {}, schema)
    if kind == "array":
        elements = value if isinstance(value, list) else []
        return [conform(element, schema.get("items")) for element in elements][: schema.get("maxItems")]
    if kind in ("number", "integer"):
        try:
            number = Decimal(str(value))
        except (InvalidOperation, ValueError):
            number = Decimal(0)
        return int(number.to_integral_value()) if kind == "integer" else float(number)
    if kind == "string":
        return "" if value is None else str(value)
    if kind == "boolean":
        return bool(value)
    return _plain(value)


def _conform_object(value: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties") or {}
    if not properties:
        plain: dict[str, Any] = _plain(value)
        return plain
    required = set(schema.get("required") or [])
    lists = [key for key, item in value.items() if isinstance(item, list)]
    array_properties = [key for key, sub in properties.items() if isinstance(sub, dict) and sub.get("type") == "array"]
    shaped: dict[str, Any] = {}
    for key, sub in properties.items():
        source = _matching_key(key, value)
        if source is None and len(lists) == 1 and array_properties == [key]:
            source = lists[0]  # our one list goes into the schema's one array, whatever each calls it
        if source is not None:
            shaped[key] = conform(value[source], sub)
        elif key in required:
            shaped[key] = conform(None, sub)
    return shaped


def _matching_key(key: str, value: dict[str, Any]) -> str | None:
    if key in value:
        return key
    for ours, theirs in SYNONYMS.items():
        if key.lower() in theirs and ours in value:
            return ours
    return None


def _plain(value: Any) -> Any:
    """JSON-ready: prices are Decimals while we parse, numbers on the wire."""
    return json.loads(json.dumps(value, default=float))


def done_data_schema(request: dict[str, Any]) -> dict[str, Any] | None:
    done = tool_named(request, DONE_TOOL) or {}
    return ((done.get("input_schema") or {}).get("properties") or {}).get("data")


# --- the replies ---------------------------------------------------------------------------------------------


def browser(name: str, input: dict[str, Any], say: str) -> Reply:
    return tool_use_reply(name, input, toolset_name=BROWSER_TOOLSET, text=say)


def done(request: dict[str, Any], success: bool, output: str, data: Any = None, say: str | None = None) -> Reply:
    payload: dict[str, Any] = {"success": success, "output": output}
    schema = done_data_schema(request)
    if data is not None and schema is not None:
        payload["data"] = conform(data, schema)
    return tool_use_reply(DONE_TOOL, payload, text=say)


def last_result_of(steps: list[Step], name: str) -> Step | None:
    return next((step for step in reversed(steps) if step.name == name and step.result is not None), None)


def output_format_schema(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a structured-output request constrains the reply's text to, if any."""
    config = request.get("output_config") or {}
    output_format = (config.get("format") if isinstance(config, dict) else None) or request.get("output_format")
    if isinstance(output_format, dict) and output_format.get("type") == "json_schema":
        return output_format.get("schema") or {}
    return None


def evaluation_kind(request: dict[str, Any]) -> str | None:
    """ "judge" or "grader" for the judge's and the outcome grader's requests (they offer no `done` tool)."""
    if tool_named(request, DONE_TOOL) is not None:
        return None
    forced = forced_tool(request)
    if forced in (JUDGE_TOOL, GRADER_TOOL):
        return "judge" if forced == JUDGE_TOOL else "grader"
    properties = (output_format_schema(request) or {}).get("properties") or {}
    if "verdict" in properties or tool_named(request, JUDGE_TOOL) is not None:
        return "judge"
    if "result" in properties or tool_named(request, GRADER_TOOL) is not None:
        return "grader"
    return None


def thinking_instead_of_text(request: dict[str, Any], reply: Reply) -> Reply:
    """With thinking on, the text a model writes before a tool call arrives as a thinking block, as on 5.5 models."""
    if not isinstance(reply, dict) or thinking_shown(request) is None or reply.get("stop_reason") != "tool_use":
        return reply
    content = [
        thinking_block(block["text"]) if block.get("type") == "text" else block for block in reply.get("content") or []
    ]
    return {**reply, "content": content}


class ScriptedDemoModel:
    """The responder of the scripted model server: `ScriptedDemoModel()(request_body) -> message body`.

    `demo_base_url` is the demo site's address (DEMO_BASE_URL by default): where a run that names no start URL,
    such as a follow-up run of a session, goes.
    """

    def __init__(self, demo_base_url: str | None = None) -> None:
        self.demo_root = demo_root_of(demo_base_url or settings.DEMO_BASE_URL)

    def __call__(self, request: dict[str, Any]) -> Reply:
        kind = evaluation_kind(request)
        if kind is not None:
            answer, tool = (
                (self.judgment(request), JUDGE_TOOL) if kind == "judge" else (self.evaluation(request), GRADER_TOOL)
            )
            return self.structured(request, answer, tool)
        if tool_named(request, DONE_TOOL) is None:
            schema = output_format_schema(request)
            if schema is not None:
                return json_reply(conform({}, schema))
            # Not an agent turn (a compaction or extraction request): a short, honest text answer.
            return text_reply("Summary: the scripted demo model followed its bundled demo trajectory.")
        return thinking_instead_of_text(request, self.agent_turn(request))

    def structured(self, request: dict[str, Any], answer: dict[str, Any], tool: str) -> Reply:
        """The answer as JSON text under `output_config.format`, else as a call of the strict tool it was offered."""
        thinking = "I weigh what the run reported against its steps." if thinking_shown(request) is not None else None
        if output_format_schema(request) is not None:
            return json_reply(answer, thinking=thinking)
        return tool_use_reply(tool, answer, thinking=thinking)

    # The agent -------------------------------------------------------------------------------------------

    def agent_turn(self, request: dict[str, Any]) -> Reply:
        messages = request.get("messages") or []
        task = first_user_text(messages)
        system = request.get("system")
        url = start_url(task, content_text(system), self.demo_root)
        steps = conversation_steps(messages)
        if steps and steps[-1].is_error:
            failed = steps[-1]
            if failed.name == DONE_TOOL:
                # Data the runtime refused would be refused again: report the failure rather than loop.
                return done(request, False, f"My result was not accepted: {failed.result}")
            return done(request, False, f"The {failed.name} step failed, so I stopped: {failed.result}")
        lowered = task.lower()
        if "invoice" in lowered:
            return self.invoice_turn(request, url, steps)
        if "upload" in lowered:
            return self.upload_turn(request, url, steps, task)
        if "sign in to my demo shop account" in lowered:
            return self.sign_in_turn(request, url, steps)
        if "demo shop account page" in lowered:
            return self.account_turn(request, url, steps)
        if "confirmation code" in lowered:
            return self.code_turn(request, url, steps)
        if "contact" in lowered:
            return self.contact_turn(request, url, steps)
        if any(word in lowered for word in ("shop", "product")):
            return self.shop_turn(request, url, steps)
        return done(request, False, UNKNOWN_TASK_OUTPUT)

    def shop_turn(self, request: dict[str, Any], url: str, steps: list[Step]) -> Reply:
        shop_url = url if "/shop" in url else urljoin(demo_root(url, self.demo_root), "shop/")
        last = steps[-1].name if steps else None
        if last is None:
            return browser("navigate", {"url": shop_url}, "I'll open the demo shop.")
        if last == "navigate":
            return browser("get_page_text", {}, "The shop is open; I'll read the product list.")
        page = last_result_of(steps, "get_page_text")
        if page is None:
            return browser("get_page_text", {}, "I'll read the page.")
        items = parse_products(page.result or "")
        if not items:
            return done(request, False, "I could not find any products with prices on the shop page.")
        listing = "; ".join(f"{item['name']} (${item['price']})" for item in items)
        # A conversation that goes on after done is a revision request or a nudge: answer with done again.
        revising = last == DONE_TOOL
        prefix = "Revised answer: " if revising else ""
        output = f"{prefix}The first page of the demo shop lists {len(items)} products: {listing}."
        say = "I checked the list again and am submitting it complete." if revising else "I have the list."
        return done(request, True, output, {"items": items}, say=say)

    def code_turn(self, request: dict[str, Any], url: str, steps: list[Step]) -> Reply:
        """Ask the operator for the order's confirmation code (a secret: the model gets its placeholder), then send
        the contact form quoting it; without an answer, say so."""
        asked = last_result_of(steps, HUMAN_TOOL)
        if asked is None:
            return tool_use_reply(
                HUMAN_TOOL, {"question": CODE_QUESTION, "secret": True}, text="I need the confirmation code from you."
            )
        if asked.result is None:
            return done(request, False, "The question to the operator was not answered.")
        told = asked.result
        placeholder = SECRET_PLACEHOLDER.search(told)
        answer = ANSWER_LINE.search(told)
        code = placeholder.group(0) if placeholder else (answer.group("text").strip() if answer else "")
        if not code:
            return done(request, False, "No one gave me the order's confirmation code, so I did not contact the shop.")
        message = f"Hello, about my order with confirmation code {code}: how do I return the Cedar Notebook?"
        after = steps[steps.index(asked) + 1 :]
        return self.contact_turn(request, url, after, message=message)

    def contact_turn(self, request: dict[str, Any], url: str, steps: list[Step], message: str | None = None) -> Reply:
        contact_url = url if "/contact" in url else urljoin(demo_root(url, self.demo_root), "contact/")
        last = steps[-1].name if steps else None
        if last is None:
            return browser("navigate", {"url": contact_url}, "I'll open the contact form.")
        if last == "navigate":
            return browser("read_page", {"filter": "interactive"}, "I'll look at the form's fields.")
        if last in ("get_page_text", DONE_TOOL):
            return self.contact_verdict(request, last_result_of(steps, "get_page_text"), message)
        snapshot_step = last_result_of(steps, "read_page")
        if snapshot_step is None:
            return browser("read_page", {"filter": "interactive"}, "I'll look at the form's fields.")
        plan = self.contact_plan(snapshot_step.result or "", message)
        if plan is None:
            return done(request, False, "The contact page has no form with name, email, message and a send button.")
        taken = len(steps) - 1 - steps.index(snapshot_step)
        if taken < len(plan):
            name, input, say = plan[taken]
            return browser(name, input, say)
        return browser("get_page_text", {}, "I sent the form; I'll read the confirmation.")

    def invoice_turn(self, request: dict[str, Any], url: str, steps: list[Step]) -> Reply:
        invoice_url = url if "/invoice" in url else urljoin(demo_root(url, self.demo_root), "invoice/")
        last = steps[-1] if steps else None
        if last is None:
            return browser("navigate", {"url": invoice_url}, "I'll open the invoice page.")
        if last.name == "navigate":
            return browser("find", {"query": "Download invoice"}, "I'll find the download link.")
        if last.name == "find":
            link = find_control(parse_controls(last.result or ""), {"link", "button"}, "download")
            if link is None:
                return done(request, False, "The invoice page has no download link.")
            return browser("left_click", {"target": {"type": "ref", "ref": link.ref}}, "Downloading the invoice.")
        arrived = DOWNLOADED.search("\n".join(step.result or "" for step in steps))
        if arrived is not None:
            output = f"The invoice arrived: {arrived.group('name')} ({arrived.group('size')} bytes)."
            return done(request, True, output, say="The invoice is downloaded.")
        if last.name == "left_click":
            return browser("wait", {"duration": 1}, "I'll give the download a moment.")
        return done(request, False, "I clicked the download link but no file arrived.")

    def upload_turn(self, request: dict[str, Any], url: str, steps: list[Step], task: str) -> Reply:
        given = GIVEN_FILE.search(task)
        if given is None:
            return done(request, False, "I was given no file to upload: attach one when launching the run.")
        upload_url = url if "/upload" in url else urljoin(demo_root(url, self.demo_root), "upload/")
        last = steps[-1] if steps else None
        if last is None:
            return browser("navigate", {"url": upload_url}, "I'll open the upload page.")
        if last.name == "navigate":
            return browser("read_page", {"filter": "interactive"}, "I'll look at the upload form.")
        snapshot = last_result_of(steps, "read_page")
        controls = parse_controls(snapshot.result or "") if snapshot else []
        if last.name == "read_page":
            field = find_control(controls, {"button"}, "document", "file", avoid="upload")
            if field is None:
                return done(request, False, "The upload page has no file field.")
            return browser(
                "file_upload",
                {"target": {"type": "ref", "ref": field.ref}, "paths": [given.group("path")]},
                "Choosing the file.",
            )
        if last.name == "file_upload":
            send = find_control(controls, {"button"}, "upload")
            if send is None:
                return done(request, False, "The upload form has no upload button.")
            return browser("left_click", {"target": {"type": "ref", "ref": send.ref}}, "Uploading it.")
        if last.name == "left_click":
            return browser("get_page_text", {}, "I'll read what the shop received.")
        shown = SHA256_LINE.search(last.result or "")
        if shown is None:
            return done(request, False, "The shop did not say it received the file.")
        output = f"The shop received the file; it shows SHA-256 {shown.group(1)}."
        return done(request, True, output, {"sha256": shown.group(1)}, say="The upload went through.")

    def contact_plan(
        self, snapshot: str, message_text: str | None = None
    ) -> list[tuple[str, dict[str, Any], str]] | None:
        controls = parse_controls(snapshot)
        name = find_control(controls, {"textbox"}, "name", avoid="email")
        email = find_control(controls, {"textbox"}, "email", "e-mail")
        message = find_control(controls, {"textbox"}, "message", "comment", "enquiry")
        send = find_control(controls, {"button"}, "send", "submit")
        if send is None or name is None or email is None or message is None:
            return None
        fields = {"name": name, "email": email, "message": message}
        plan: list[tuple[str, dict[str, Any], str]] = [
            (
                "form_input",
                {"target": {"type": "ref", "ref": fields[key].ref}, "value": CONTACT_VALUES[key]},
                f"Filling in the {key}.",
            )
            for key in ("name", "email")
        ]
        topic = find_control(controls, {"combobox", "listbox"})
        if topic is not None:
            plan.append(
                (
                    "form_input",
                    {"target": {"type": "ref", "ref": topic.ref}, "value": CONTACT_VALUES["topic"]},
                    "Choosing the topic.",
                )
            )
        plan.append(
            (
                "form_input",
                {
                    "target": {"type": "ref", "ref": fields["message"].ref},
                    "value": message_text or CONTACT_VALUES["message"],
                },
                "Writing the message.",
            )
        )
        checkbox = find_control(controls, {"checkbox"})
        if checkbox is not None:
            plan.append(
                (
                    "form_input",
                    {"target": {"type": "ref", "ref": checkbox.ref}, "value": True},
                    f"Ticking “{checkbox.name}”.",
                )
            )
        plan.append(("left_click", {"target": {"type": "ref", "ref": send.ref}}, "Sending the form."))
        return plan

    def contact_verdict(self, request: dict[str, Any], page: Step | None, message: str | None = None) -> Reply:
        text = (page.result if page else "") or ""
        if "thank you" not in text.lower():
            return done(request, False, "I sent the contact form but the page did not confirm it was received.")
        if message is not None:
            output = (
                "I sent the contact form quoting the confirmation code the operator gave me; the shop confirmed it."
            )
            return done(request, True, output, {"submitted": True}, say="The form went through.")
        output = (
            f"I sent the contact form as {CONTACT_VALUES['name']} <{CONTACT_VALUES['email']}> about "
            f"“{CONTACT_VALUES['topic']}”; the shop confirmed it with a thank-you page echoing the message."
        )
        return done(request, True, output, {"submitted": True, **CONTACT_VALUES}, say="The form went through.")

    def sign_in_turn(self, request: dict[str, Any], url: str, steps: list[Step]) -> Reply:
        """Sign in with the run's secrets (typed as placeholders: the model never sees the values), then read the
        page that answers."""
        sign_in_url = url if "/account/sign-in" in url else urljoin(demo_root(url, self.demo_root), "account/sign-in/")
        last = steps[-1].name if steps else None
        if last is None:
            return browser("navigate", {"url": sign_in_url}, "I'll open the shop's sign-in page.")
        if last == "navigate":
            return browser("read_page", {"filter": "interactive"}, "I'll find the sign-in form's fields.")
        if last in ("get_page_text", DONE_TOOL):
            return self.account_verdict(request, last_result_of(steps, "get_page_text"), signed_in_here=True)
        snapshot_step = last_result_of(steps, "read_page")
        controls = parse_controls(snapshot_step.result or "") if snapshot_step else []
        email = find_control(controls, {"textbox"}, "email")
        password = find_control(controls, {"textbox"}, "password")
        submit = find_control(controls, {"button"}, "sign in")
        if email is None or password is None or submit is None:
            return done(request, False, "The sign-in page has no form with an email, a password and a sign-in button.")
        system = content_text(request.get("system"))
        if "{{secret:SHOP_USER}}" not in system or "{{secret:SHOP_PASSWORD}}" not in system:
            return done(request, False, "This run has no SHOP_USER and SHOP_PASSWORD secrets to sign in with.")
        plan: list[tuple[str, dict[str, Any], str]] = [
            ("form_input", {"target": {"type": "ref", "ref": email.ref}, "value": "{{secret:SHOP_USER}}"}, "Email."),
            ("form_input", {"target": {"type": "ref", "ref": password.ref}, "value": "{{secret:SHOP_PASSWORD}}"}, "Password."),
            ("left_click", {"target": {"type": "ref", "ref": submit.ref}}, "Signing in."),
        ]  # fmt: skip
        taken = len(steps) - 1 - steps.index(snapshot_step) if snapshot_step else 0
        if taken < len(plan):
            name, input, say = plan[taken]
            return browser(name, input, say)
        return browser("get_page_text", {}, "I signed in; I'll read the page.")

    def account_turn(self, request: dict[str, Any], url: str, steps: list[Step]) -> Reply:
        """Open the account page and report who it says is signed in: with a saved profile, no sign-in step."""
        account_url = url if "/account" in url else urljoin(demo_root(url, self.demo_root), "account/")
        last = steps[-1].name if steps else None
        if last is None:
            return browser("navigate", {"url": account_url}, "I'll open the account page.")
        if last == "navigate":
            return browser("get_page_text", {}, "I'll read who is signed in.")
        return self.account_verdict(request, last_result_of(steps, "get_page_text"), signed_in_here=False)

    def account_verdict(self, request: dict[str, Any], page: Step | None, *, signed_in_here: bool) -> Reply:
        text = (page.result if page else "") or ""
        match = re.search(r"(?:Signed in as|Welcome back,) ([^(\n.]+)", text)
        if match is None:
            return done(request, False, "The shop says no one is signed in.")
        who = match.group(1).strip()
        how = "I signed in with the run's secrets" if signed_in_here else "The browser was already signed in"
        return done(request, True, f"{how}: the shop shows {who} as signed in.", {"signed_in_as": who})

    # The judge and the grader ---------------------------------------------------------------------------

    def judgment(self, request: dict[str, Any]) -> dict[str, Any]:
        text = request_text(request)
        parts = sections(text)
        verdict_section = parts.get(VERDICT_SECTION, text)
        line = VERDICT_SUCCESS_LINE.search(verdict_section)
        claimed = line.group(1).lower() if line else None
        if claimed is None:
            found = SUCCESS_JSON.findall(text)
            claimed = found[-1].lower() if found else None
        if claimed == "true":
            judgment = {
                "verdict": "pass",
                "reason": "The agent reported success and the steps and final page it recorded support its output.",
            }
        elif claimed == "false":
            judgment = {"verdict": "fail", "reason": "The agent itself reported that it did not accomplish the task."}
        else:
            judgment = {"verdict": "uncertain", "reason": "The run ended without a verdict from the agent to check."}
        return {**self.weigh_judge_context(judgment, claimed, parts), "blocked": False, "impossible": False}

    def weigh_judge_context(
        self, judgment: dict[str, str], claimed: str | None, parts: dict[str, str]
    ) -> dict[str, str]:
        """The operator's judge_context, weighed first as the judge is told to: a phrase a statement quotes must be in
        the agent's output or on the final page, else a claimed success fails; every statement is named in the
        reason, so what the judge was given shows in what it answered."""
        statements = judge_statements(parts.get(JUDGE_CONTEXT_SECTION, ""))
        if not statements:
            return judgment
        evidence = "\n".join(parts.get(title, "") for title in (VERDICT_SECTION, FINAL_PAGE_SECTION))
        for statement in statements:
            missing = [phrase for phrase in quoted_phrases(statement) if phrase.lower() not in evidence.lower()]
            if claimed == "true" and missing:
                return {
                    "verdict": "fail",
                    "reason": f"The agent reported success, but the judge context says “{statement}”, and neither its "
                    f"output nor the final page shows “{missing[0]}”.",
                }
        weighed = "; ".join(f"“{statement}”" for statement in statements)
        return {**judgment, "reason": f"{judgment['reason']} Judge context weighed first: {weighed}."}

    def evaluation(self, request: dict[str, Any]) -> dict[str, Any]:
        match = ITERATION.search(request_text(request))
        iteration = int(match.group(1)) if match else 0
        if iteration == 0:
            evaluation = {
                "result": "needs_revision",
                "explanation": "The deliverables should be checked against the page once more and submitted "
                "complete, stating exactly what was found or done.",
            }
        else:
            evaluation = {"result": "satisfied", "explanation": "The revised output states the count and every item."}
        return evaluation


def scripted_model_server(host: str = "127.0.0.1", port: int = 0, demo_base_url: str | None = None) -> WireServer:
    """A wire server answering with the scripted demo model; `.start()` it, or use it as a context manager."""
    return WireServer(ScriptedDemoModel(demo_base_url), host=host, port=port)
