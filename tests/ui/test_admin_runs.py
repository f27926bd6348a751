"""The admin's run list: signals, the latest judge verdict, requests and cost, with a filter for each, no N+1."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from judge.models import Judgment
from runs.models import Run
from tests.support.clients import client_for
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:runs_run_changelist"


@pytest.fixture
def staff_client(db):
    user = get_user_model().objects.create_user(username="olga", password="olga-password-123", is_staff=True)
    codenames = ["view_run", "view_event", "view_modelrequest", "view_judgment"]
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return client_for(user)


def signals(**overrides) -> dict:
    base = {
        "turns": 4,
        "max_turns": 30,
        "budget_notices": 0,
        "loop_nudges": 0,
        "stagnation_nudges": 0,
        "failures_max": False,
        "verdict_turn": "none",
        "verdict_followed": True,
    }
    return {**base, **overrides}


@pytest.fixture
def runs(acme):
    """Four finished runs, each firing something different."""
    calm = make_run(
        acme, status="succeeded", success=True, signals=signals(), usage_requests=5, cost_usd=Decimal("0.05")
    )
    capped = make_run(
        acme,
        status="failed",
        success=False,
        error_code="agent_limit",
        max_turns=10,
        signals=signals(turns=10, max_turns=10, budget_notices=3, verdict_turn="cap", verdict_followed=False),
        usage_requests=12,
        cost_usd=Decimal("0.40"),
    )
    loopy = make_run(
        acme,
        status="succeeded",
        success=True,
        signals=signals(turns=20, loop_nudges=2, stagnation_nudges=1, verdict_turn="failures", failures_max=True),
        usage_requests=60,
        cost_usd=Decimal("2.5"),
    )
    prose = make_run(
        acme,
        status="failed",
        success=False,
        error_code="agent_incomplete",
        signals=signals(verdict_turn="prose", verdict_followed=False),
    )
    Judgment.objects.create(run=calm, verdict="fail", reason="old", judged_at=timezone.now() - timedelta(hours=1))
    Judgment.objects.create(run=calm, verdict="pass", reason="re-judged")
    Judgment.objects.create(run=capped, verdict="uncertain", reason="blocked")
    return {"calm": calm, "capped": capped, "loopy": loopy, "prose": prose}


def listed(client, **params) -> set[str]:
    response = client.get(reverse(CHANGELIST), params)
    assert response.status_code == 200
    return {run.public_id for run in response.context["cl"].result_list}


def ids(runs, *names) -> set[str]:
    return {runs[name].public_id for name in names}


def test_alice_who_is_not_staff_is_refused_the_run_admin(alice_client):
    response = alice_client.get(reverse(CHANGELIST))
    assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))


def test_each_column_shows_what_the_run_recorded(staff_client, runs):
    response = staff_client.get(reverse(CHANGELIST))
    rows = {run.public_id: run for run in response.context["cl"].result_list}
    admin = response.context["cl"].model_admin
    capped = rows[runs["capped"].public_id]
    assert admin.verdict_turn(capped) == "cap" and admin.verdict_followed(capped) is False
    assert admin.turns(capped) == "10/10" and admin.budget_notices(capped) == 3
    assert admin.judge_verdict(capped) == "uncertain"
    loopy = rows[runs["loopy"].public_id]
    assert (admin.loop_nudges(loopy), admin.stagnation_nudges(loopy)) == (2, 1)
    assert admin.judge_verdict(rows[runs["calm"].public_id]) == "pass"
    assert admin.judge_verdict(rows[runs["prose"].public_id]) == "-"
    content = response.content.decode()
    assert "agent_limit" in content
    assert reverse("runs:detail", args=[runs["calm"].public_id]) in content


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"status__exact": "failed"}, ["capped", "prose"]),
        ({"success__exact": "1"}, ["calm", "loopy"]),
        ({"error_code__exact": "agent_incomplete"}, ["prose"]),
        ({"verdict_turn": "cap"}, ["capped"]),
        ({"verdict_turn": "none"}, ["calm"]),
        ({"verdict_followed": "no"}, ["capped", "prose"]),
        ({"verdict_followed": "yes"}, ["calm", "loopy"]),
        ({"turns": "all"}, ["capped"]),
        ({"failures_max": "yes"}, ["loopy"]),
        ({"loop_nudges": "any"}, ["loopy"]),
        ({"stagnation_nudges": "none"}, ["calm", "capped", "prose"]),
        ({"budget_notices": "any"}, ["capped"]),
        ({"judge_verdict": "pass"}, ["calm"]),
        ({"judge_verdict": "unjudged"}, ["loopy", "prose"]),
        ({"requests": "51+"}, ["loopy"]),
        ({"cost": "0.10-1"}, ["capped"]),
        ({"cost": "zero"}, ["prose"]),
        ({"q": "first page"}, ["calm", "capped", "loopy", "prose"]),
    ],
)
def test_filters_select_the_runs_that_match(staff_client, runs, params, expected):
    assert listed(staff_client, **params) == ids(runs, *expected)


def test_search_by_public_id(staff_client, runs):
    assert listed(staff_client, q=runs["loopy"].public_id) == ids(runs, "loopy")


def test_unrecorded_signals_are_their_own_filter_choice(staff_client, acme, runs):
    fresh = make_run(acme)
    assert listed(staff_client, verdict_turn="unrecorded") == {fresh.public_id}
    assert listed(staff_client, turns="unrecorded") == {fresh.public_id}


def test_the_run_list_needs_no_query_per_run(staff_client, acme):
    def count() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert staff_client.get(reverse(CHANGELIST)).status_code == 200
        return len(captured)

    for _ in range(3):
        run = make_run(acme, signals=signals())
        Judgment.objects.create(run=run, verdict="pass", reason="ok")
    few = count()
    runs = [Run(workspace=acme, session=run.session, task="t", model="m", signals=signals()) for _ in range(60)]
    Run.objects.bulk_create(runs)
    assert count() == few


def test_task_text_is_escaped(staff_client, acme):
    make_run(acme, task="<script>alert(1)</script> buy socks")
    content = staff_client.get(reverse(CHANGELIST)).content.decode()
    assert "<script>alert(1)</script>" not in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt; buy socks" in content


def test_run_page_links_to_its_page_events_and_requests_and_is_read_only(staff_client, runs):
    run = runs["capped"]
    response = staff_client.get(reverse("admin:runs_run_change", args=[run.pk]))
    content = response.content.decode()
    events_url = f"{reverse('admin:runs_event_changelist')}?run__id__exact={run.pk}"
    assert reverse("runs:detail", args=[run.public_id]) in content
    assert events_url in content
    assert 'name="task"' not in content
    assert staff_client.get(events_url).status_code == 200
    requests_url = f"{reverse('admin:agent_platform_modelrequest_changelist')}?run__id__exact={run.pk}"
    assert staff_client.get(requests_url).status_code == 200


def test_judgments_link_to_their_run_and_escape_the_reason(staff_client, runs):
    Judgment.objects.create(run=runs["loopy"], verdict="fail", reason="<img src=x onerror=alert(1)> gave up")
    content = staff_client.get(reverse("admin:judge_judgment_changelist")).content.decode()
    assert "<img src=x" not in content and "&lt;img src=x onerror=alert(1)&gt; gave up" in content
    assert reverse("admin:runs_run_change", args=[runs["loopy"].pk]) in content
