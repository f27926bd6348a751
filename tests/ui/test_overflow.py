"""No page overflows: every page a signed-in operator reaches (the admin's as staff), in real Chromium against Daphne,
at a laptop's 1,440 px and a phone's 390 px, with realistic data (long URLs and tasks, judgments, a batch with its
report, both Haiku 5.5 price tiers). A page fails when it scrolls sideways, or when a control (button, input,
select, link) reaches past its scrolling container or the viewport, or its text is cut, or another element lies over
it (tests/support/layout.py)."""

import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from agent_platform.models import Membership, ModelRequest, Price
from evals.models import Batch
from judge.models import Judgment
from runs.models import Run
from tests import messages_stub as stub_fixtures
from tests.support import live
from tests.support.clients import ApiClient
from tests.support.factories import make_run, make_session
from tests.support.layout import COVERED, IN_VIEW
from tests.support.live import emit, signed_in_page
from webhooks.models import Endpoint, SecretScheme

asgi_server = live.asgi_server
chromium = live.chromium
messages_stub_server = stub_fixtures.messages_stub_server
messages_stub = stub_fixtures.messages_stub

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_URL = "http://127.0.0.1:8001/catalogue/" + "/".join(f"section-{n}-with-a-long-readable-slug" for n in range(6))
LONG_TASK = (
    "Open the shop's catalogue, go through every page of the garden section, and list each product with its price, "
    "its stock status and the delivery estimate shown on its own page; ignore sponsored items. " * 3
)
# Measured in the page: the offending things, each as one line naming the element and by how much.
OVERFLOWS = """() => {
  const problems = [];
  const width = window.innerWidth;
  const page = document.documentElement.scrollWidth;
  if (page > width) problems.push(`the page is ${page}px wide in a ${width}px viewport`);
  const name = (el) => {
    const text = (el.innerText || el.value || el.getAttribute("aria-label") || "").trim().slice(0, 40);
    return `<${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}> "${text}"`;
  };
  const scroller = (el) => {
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (/(auto|scroll|hidden|clip)/.test(getComputedStyle(up).overflowX)) return up;
    }
    return null;
  };
  // A control inside a container that scrolls sideways (auto, scroll) is reached by scrolling it, as a wide table
  // on a phone is: there the control must lie within what the container scrolls to, and the container itself must
  // fit where it sits. A container that clips (hidden, clip) cuts off what passes its edge, so it bounds the control.
  const scrolls = (el) => /(auto|scroll)/.test(getComputedStyle(el).overflowX);
  const scrolledTo = (el) => {
    const box = el.getBoundingClientRect();
    const left = box.left + el.clientLeft - el.scrollLeft;
    return { left, right: left + el.scrollWidth };
  };
  const measure = document.createElement("span");
  measure.style.cssText = "position:absolute;visibility:hidden;white-space:pre";
  document.body.appendChild(measure);
  const controls = "button, input:not([type=hidden]), select, textarea, a[href]";
  for (const el of document.querySelectorAll(controls)) {
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (box.width <= 1 || box.height <= 1 || style.visibility === "hidden") continue;  // not shown, or screen-reader only
    if (el.closest("[hidden], details:not([open]) > :not(summary)")) continue;
    if (box.right <= 0) continue;  // moved off-screen on purpose until focused (the skip link)
    let subject = el, subjectBox = box, container = scroller(el), within = "";
    while (container && scrolls(container)) {
      const reach = scrolledTo(container);
      if (subject === el && (box.left < reach.left - 1 || box.right > reach.right + 1)) break;
      within = ` in the scrolling ${name(container)}`;
      subject = container;
      subjectBox = container.getBoundingClientRect();
      container = scroller(container);
    }
    const limits = container ? (scrolls(container) ? scrolledTo(container) : container.getBoundingClientRect())
                             : { left: 0, right: width };
    const left = Math.max(limits.left, 0), right = Math.min(limits.right, width);
    if (subjectBox.left < left - 1 || subjectBox.right > right + 1) {
      problems.push(`${name(el)}${within} spans ${Math.round(subjectBox.left)}-${Math.round(subjectBox.right)}px, ` +
                    `its container ${Math.round(left)}-${Math.round(right)}px`);
    }
    if (el.tagName === "SELECT" && el.selectedOptions.length) {
      measure.style.font = style.font;
      measure.textContent = el.selectedOptions[0].text;
      const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      if (measure.offsetWidth > room + 1) problems.push(`${name(el)} cuts its choice "${measure.textContent}"`);
    } else if ((el.tagName === "BUTTON" || el.tagName === "A") && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
      problems.push(`${name(el)} cuts its text (${el.scrollWidth}px in ${el.clientWidth}px)`);
    }
  }
  measure.remove();
  return problems;
}"""


def seed(acme, acme_key: str) -> dict[str, str]:
    """Realistic data for every page; returns the addresses of the pages that name a row."""
    now = timezone.now()
    session = make_session(acme)
    finished = make_run(
        acme, session, task=LONG_TASK, start_url=LONG_URL, status=Run.Status.SUCCEEDED, success=True, judge=True,
        output="Found 14 products in the garden section; " + "the rest were sponsored. " * 6,
        data={"items": [{"name": f"Cedar planter, large, {n}", "price": 12.5 + n} for n in range(8)]},
        started_at=now - timedelta(minutes=3), finished_at=now, usage_requests=9, usage_input=120_000,
        usage_output=4_000, cost_usd=Decimal("0.4123"),
    )  # fmt: skip
    emit(finished, "run.started", {"model": finished.model, "max_turns": 30, "scripted": False})
    for turn in range(1, 4):
        emit(finished, "agent.message", {"text": f"Reading {LONG_URL}?page={turn} " * 2, "turn": turn})
        emit(finished, "agent.tool_use", {"id": f"u{turn}", "name": "navigate", "toolset": "browser", "turn": turn,
                                          "input": {"url": f"{LONG_URL}?page={turn}"}})  # fmt: skip
        emit(finished, "agent.tool_result", {"tool_use_id": f"u{turn}", "name": "navigate", "content": "ok " * 80})
    emit(finished, "run.finished", {"status": "succeeded", "success": True})
    Judgment.objects.create(run=finished, verdict="pass", reason="The list matches the catalogue pages. " * 5)
    overclaim = make_run(
        acme, task=LONG_TASK, start_url=LONG_URL, status=Run.Status.SUCCEEDED, success=True, judge=True,
        output="All done.", finished_at=now,
    )  # fmt: skip
    Judgment.objects.create(run=overclaim, verdict="fail", reason="Half the products are missing. " * 6, model="judge")
    # A run that fired every signal and ended on a limit: the admin list's widest row.
    make_run(
        acme, task=LONG_TASK, start_url=LONG_URL, status=Run.Status.FAILED, success=False, finished_at=now,
        error_code=Run.ErrorCode.AGENT_LIMIT, usage_requests=31, cost_usd=Decimal("1.2345"),
        signals={"turns": 30, "max_turns": 30, "budget_notices": 3, "loop_nudges": 2, "stagnation_nudges": 4,
                 "failures_max": True, "verdict_turn": "failures", "verdict_followed": False},
    )  # fmt: skip
    live = make_run(acme, task=LONG_TASK, start_url=LONG_URL, status=Run.Status.RUNNING, started_at=now, max_turns=30)
    emit(live, "run.started", {"model": live.model, "max_turns": 30, "scripted": False})
    emit(live, "agent.message", {"text": f"Opening {LONG_URL}", "turn": 1})

    batch_api = ApiClient(acme_key)
    created = batch_api.post(
        "/batches",
        {"name": "Garden catalogue, every page, twice " * 2, "repeats": 2, "concurrency": 2,
         "tasks": [{"task": LONG_TASK, "start_url": LONG_URL}]},
    )  # fmt: skip
    assert created.status_code == 201, created.content
    batch = Batch.objects.get(public_id=created.json()["id"])
    for run, verdict in zip(Run.objects.filter(batch_item__batch=batch), ["pass", "fail"], strict=True):
        Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED, success=True, finished_at=now)
        Judgment.objects.create(run=run, verdict=verdict, reason="Checked against the pages. " * 4)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.FINISHED, finished_at=now)

    start = datetime(2026, 10, 1, tzinfo=UTC)
    for threshold, rate in ((0, "1.00"), (200_000, "2.00")):
        Price.objects.update_or_create(
            model="claude-haiku-5-5", speed="standard", valid_from=start, min_prompt_tokens=threshold,
            defaults={"input_per_mtok": Decimal(rate), "output_per_mtok": Decimal(rate) * 5,
                      "cache_write_5m_per_mtok": Decimal(rate) * Decimal("1.25"),
                      "cache_write_1h_per_mtok": Decimal(rate) * 2, "cache_read_per_mtok": Decimal(rate) / 10},
        )  # fmt: skip
    for day in range(5):
        for source, model in (("agent", "claude-haiku-5-5"), ("judge", "claude-sonnet-5-5")):
            ModelRequest.objects.create(
                workspace=acme, run=finished, source=source, model=model, input_tokens=210_000 + day * 1000,
                output_tokens=900, cost_usd=Decimal("0.2150"), created_at=now - timedelta(days=day),
            )  # fmt: skip
    # Webhook endpoints with a long URL: one on a legacy secret, one within a rotation's grace.
    Endpoint.objects.create(workspace=acme, url=LONG_URL, events=["run.finished"], secret_scheme=SecretScheme.LEGACY)
    Endpoint.objects.create(
        workspace=acme, url="https://hooks.example.com/pilothouse", events=["run.finished", "run.judged", "batch.finished"],
        retiring_secret="whsec_previous", retiring_secret_scheme=SecretScheme.STANDARD,
        retiring_until=now + timedelta(hours=3),
    )  # fmt: skip
    return {
        "run_live": f"/runs/{live.public_id}/",
        "run_finished": f"/runs/{finished.public_id}/",
        "session": f"/sessions/{session.public_id}/",
        "batch_report": f"/batches/{batch.public_id}/",
    }


PAGES = {
    "runs": "/",
    "run_live": None,
    "run_finished": None,
    "sessions": "/sessions/",
    "session": None,
    "batches": "/batches/",
    "batch_new": "/batches/new/",
    "batch_report": None,
    "triage": "/triage/",
    "usage": "/usage/",
    "settings": "/settings/",
    "webhooks": "/settings/webhooks/",
    "launch": "/runs/new/",
    "profiles": "/profiles/",
    "not_found": "/runs/run_doesnotexist/",
    "admin_runs": "/admin/runs/run/",
    "admin_model_requests": "/admin/agent_platform/modelrequest/",
    "admin_billing": "/admin/agent_platform/modelrequest/billing/",
    "admin_prices": "/admin/agent_platform/price/",
}
WIDTHS = [1440, 390]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", PAGES)
def test_the_page_fits_its_width(name, width, messages_stub_server, asgi_server, chromium, acme, acme_key):
    operator = get_user_model().objects.create_user(username="olga", is_staff=True, is_superuser=True)
    Membership.objects.create(user=operator, workspace=acme, role=Membership.Role.OWNER)
    addresses = seed(acme, acme_key)
    path = PAGES[name] or addresses[name]
    page = signed_in_page(chromium, asgi_server, operator)
    page.set_viewport_size({"width": width, "height": 900})
    response = page.goto(f"{asgi_server}{path}")
    assert response is not None
    assert response.status == (404 if name == "not_found" else 200), f"{path} answered {response.status}"
    page.evaluate("document.fonts.ready")
    problems = page.evaluate(OVERFLOWS) + page.evaluate(COVERED)
    if os.environ.get("OVERFLOW_SCREENSHOTS"):
        page.screenshot(path=f"{os.environ['OVERFLOW_SCREENSHOTS']}/{name}-{width}.png", full_page=True)
    page.context.close()
    assert problems == [], f"{name} at {width}px:\n" + "\n".join(problems)


# What each page must show as it opens at a width, without sideways scrolling: the column or the day that tells most.
IN_VIEW_AT = [
    # on a phone: every usage table's Cost column and the chart's today
    ("usage", 390, [".data-table th.cost", ".data-table td.cost", ".chart text.today"]),
    ("usage", 1440, [".data-table th.cost", ".data-table td.cost", ".chart text.today"]),
    # on a laptop: the runs admin's cost column, beside its filters
    ("admin_runs", 1440, ["th.column-cost", "td.field-cost"]),
]


@pytest.mark.parametrize(("name", "width", "selectors"), IN_VIEW_AT)
def test_what_tells_most_is_in_view_without_scrolling(
    name, width, selectors, messages_stub_server, asgi_server, chromium, acme, acme_key
):
    operator = get_user_model().objects.create_user(username="olga", is_staff=True, is_superuser=True)
    Membership.objects.create(user=operator, workspace=acme, role=Membership.Role.OWNER)
    seed(acme, acme_key)
    page = signed_in_page(chromium, asgi_server, operator)
    page.set_viewport_size({"width": width, "height": 900})
    response = page.goto(f"{asgi_server}{PAGES[name]}")
    assert response is not None and response.status == 200
    page.evaluate("document.fonts.ready")
    problems = page.evaluate(IN_VIEW, selectors) + page.evaluate(OVERFLOWS)
    page.context.close()
    assert problems == [], f"{name} at {width}px:\n" + "\n".join(problems)
