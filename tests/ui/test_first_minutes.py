"""The operator's first ten minutes as the server renders them: keys for the operator's own
workspace, honest states of cancelled and judged runs, turn counts that agree, keys made once, follow-ups that keep
what was typed and wait for their session, readable sessions, a compact admin, and the small things around."""

import io
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from agent_platform.lib.money import format_usd
from agent_platform.models import ApiKey, Membership, Price, Workspace
from judge.models import Judgment
from runs.events import emit
from runs.lifecycle import request_cancel, wait_behind_earlier_run
from runs.models import Run
from runs.presenters import reply_labels
from tests.support.factories import make_run, make_session

pytestmark = pytest.mark.django_db


def create_key(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("createapikey", *args, stdout=out, stderr=err)
    return out.getvalue().strip().splitlines()[-1], err.getvalue()


# --- 1: the README's key is for the operator's workspace ---------------------------------------------------------


def test_createapikey_for_a_user_uses_their_workspace_and_says_who_sees_its_runs(alice, acme):
    secret, said = create_key("--for", "alice")
    assert ApiKey.authenticate(secret).workspace == acme
    assert "alice (owner)" in said and "acme" in said


def test_createapikey_creating_a_workspace_for_a_user_makes_them_its_owner(alice):
    secret, said = create_key("my-team", "--create", "--for", "alice")
    team = Workspace.objects.get(slug="my-team")
    assert ApiKey.authenticate(secret).workspace == team
    assert Membership.objects.get(workspace=team, user=alice).role == Membership.Role.OWNER
    assert "Added alice" in said


def test_createapikey_for_a_memberless_workspace_warns_and_says_how_to_add_a_member(db):
    _, said = create_key("lonely", "--create")
    assert "no members: nobody sees its runs in the UI" in said
    assert "--for USERNAME" in said and "/admin/agent_platform/membership/add/" in said


def test_createapikey_refuses_an_unknown_user_and_a_missing_workspace(db):
    with pytest.raises(CommandError, match="No user"):
        create_key("--for", "nobody")
    with pytest.raises(CommandError, match="Name a workspace"):
        create_key()


def test_a_run_launched_with_the_operators_key_is_on_their_runs_list(alice, alice_client, acme):
    secret, _ = create_key("--for", "alice")
    response = Client().post(
        "/api/v1/runs",
        data={"task": "Read the shop's front page."},
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code in (200, 201), response.content
    assert response.json()["id"] in alice_client.get("/").content.decode()


# --- 2: a cancelled run with judging on ----------------------------------------------------------------------------


def test_a_run_cancelled_while_queued_says_it_is_not_judged_and_has_no_signals(alice_client, acme):
    run = make_run(acme, judge=True)
    request_cancel(run)
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "Waiting for the judge" not in page
    assert "a cancelled run is not judged" in page
    assert "Recorded when the run ends" not in page and "the run ended before its agent started" in page
    assert ">judged<" not in page
    row = alice_client.get("/").content.decode()
    assert "pending" not in row and "not judged" in row


def test_the_timeline_does_not_repeat_the_cancelled_status(alice_client, acme):
    run = make_run(acme)
    request_cancel(run)
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    finished = page.split('data-type="run.finished"')[1].split("</li>")[0]
    assert finished.count("cancelled") == 1 + finished.count("Cancelled by")  # the badge, then the message only


def test_the_judged_pill_shows_only_once_there_is_a_judgment(alice_client, acme):
    run = make_run(acme, judge=True, status=Run.Status.SUCCEEDED, success=True)
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert ">judging…<" in page and ">judged<" not in page
    Judgment.objects.create(run=run, verdict="pass", reason="Fine.")
    assert ">judged<" in alice_client.get(f"/runs/{run.public_id}/").content.decode()


# --- 3: the page's header and panels read one state -------------------------------------------------------------------


def test_the_summary_carries_the_headers_numbers_for_the_live_page(alice_client, acme):
    run = make_run(acme, status=Run.Status.SUCCEEDED, success=True, usage_requests=3, usage_output=40)
    html = alice_client.get(f"/runs/{run.public_id}/summary/").content.decode()
    assert 'data-status="succeeded"' in html and 'data-usage-requests="3"' in html
    assert 'data-finished="true"' in html and 'data-duration="' in html


# --- 4: turns are counted one way ---------------------------------------------------------------------------------


def browser_reply(run, reply: int, result: str = "ok") -> None:
    emit(run, "agent.message", {"text": "Looking.", "turn": reply})
    emit(run, "agent.tool_use", {"id": f"u{reply}", "name": "navigate", "toolset": "browser", "turn": reply})
    emit(run, "agent.tool_result", {"tool_use_id": f"u{reply}", "name": "navigate", "content": result})


def test_timeline_turns_are_numbered_as_the_budget_counts_them(alice_client, acme):
    run = make_run(acme, status=Run.Status.RUNNING, max_turns=30)
    emit(run, "agent.message", {"text": "Let me think.", "turn": 1})  # a prose reply: no action turn
    browser_reply(run, 2)
    browser_reply(run, 3)
    browser_reply(run, 4, "verdict_required: this is the verdict turn; every tool but done is refused.")
    emit(run, "agent.tool_use", {"id": "d5", "name": "done", "toolset": None, "turn": 5})
    assert reply_labels(list(run.events.order_by("seq"))) == {
        1: "Reply", 2: "Turn 1", 3: "Turn 2", 4: "Verdict", 5: "Verdict"
    }  # fmt: skip
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert '<span id="turns">2</span>' in page
    assert ">Turn 3<" not in page and ">Turn 4<" not in page


# --- 5: API keys are made once, named, revoked on purpose, copied ------------------------------------------------------


def test_creating_a_key_redirects_so_a_reload_makes_no_second_key(alice_client, acme):
    response = alice_client.post("/settings/keys/", {"name": "ci"})
    assert response.status_code == 302
    shown = alice_client.get("/settings/")
    assert 'id="new-secret"' in shown.content.decode() and shown["Cache-Control"] == "no-store"
    assert 'data-copy="new-secret"' in shown.content.decode()
    reloaded = alice_client.get("/settings/").content.decode()
    assert 'id="new-secret"' not in reloaded
    assert ApiKey.objects.filter(workspace=acme).count() == 1


def test_a_key_needs_a_name(alice_client, acme):
    response = alice_client.post("/settings/keys/", {"name": "   "}, follow=True)
    assert "Give the key a name" in response.content.decode()
    assert not ApiKey.objects.filter(workspace=acme).exists()


def test_revoking_asks_first(alice_client, acme):
    ApiKey.issue(acme, name="ci")
    page = alice_client.get("/settings/").content.decode()
    assert 'data-confirm="Revoke' in page


# --- 6: follow-ups --------------------------------------------------------------------------------------------------


def test_the_full_follow_up_form_keeps_the_typed_task_and_the_sessions_judging(alice_client, acme):
    run = make_run(acme, judge=True, judge_context=["Prices are in euros."], max_turns=12)
    page = alice_client.get(f"/runs/new/?session={run.session.public_id}&task=Open+the+cart").content.decode()
    assert ">Open the cart</textarea>" in page
    assert 'id="id_judge" checked' in page
    assert 'value="Prices are in euros."' in page and 'value="12"' in page


def test_a_follow_up_waits_behind_its_sessions_running_run_and_says_so_once(acme):
    first = make_run(acme, status=Run.Status.RUNNING)
    follow_up = make_run(acme, session=first.session)
    assert wait_behind_earlier_run(follow_up.pk) is True
    assert wait_behind_earlier_run(follow_up.pk) is True
    waiting = list(follow_up.events.filter(type="run.waiting"))
    assert len(waiting) == 1 and waiting[0].payload["behind"] == first.public_id
    Run.objects.filter(pk=first.pk).update(status=Run.Status.SUCCEEDED)
    assert wait_behind_earlier_run(follow_up.pk) is False


def test_a_run_of_another_session_does_not_hold_a_run_back(acme):
    make_run(acme, status=Run.Status.RUNNING)
    assert wait_behind_earlier_run(make_run(acme).pk) is False


def test_the_waiting_run_page_names_the_run_it_waits_for(alice_client, acme):
    first = make_run(acme, status=Run.Status.RUNNING)
    follow_up = make_run(acme, session=first.session)
    wait_behind_earlier_run(follow_up.pk)
    page = alice_client.get(f"/runs/{follow_up.public_id}/").content.decode()
    assert f'Queued behind <a class="mono" href="/runs/{first.public_id}/">{first.public_id}</a>' in page


# --- 7: sessions ---------------------------------------------------------------------------------------------------


def test_sessions_list_shows_the_task_latest_status_and_run_count(alice_client, acme):
    session = make_session(acme)
    make_run(acme, session=session, task="Find <b>socks</b> on the shop", status=Run.Status.SUCCEEDED)
    make_run(acme, session=session, task="Then the cart", status=Run.Status.RUNNING)
    page = alice_client.get("/sessions/").content.decode()
    row = page.split(session.public_id, 1)[1].split("</tr>")[0]
    assert "Find &lt;b&gt;socks&lt;/b&gt; on the shop" in row
    assert "st-running" in row and '<td class="num">2</td>' in row


def test_a_sessions_runs_table_is_not_squeezed_into_a_half_width_card(alice_client, acme):
    run = make_run(acme)
    page = alice_client.get(f"/sessions/{run.session.public_id}/").content.decode()
    assert '<div class="stack">' in page and 'class="run-grid"' not in page


# --- 8: the admin ---------------------------------------------------------------------------------------------------


@pytest.fixture
def staff_client(db):
    user = get_user_model().objects.create_superuser("root", "", "root-password-123")
    client = Client()
    client.force_login(user)
    return client


def test_admin_runs_list_shows_signals_in_one_column(staff_client, acme):
    make_run(acme, signals={"turns": 3, "max_turns": 10, "verdict_turn": "cap", "verdict_followed": False,
                            "loop_nudges": 2, "stagnation_nudges": 0, "budget_notices": 1, "failures_max": False})  # fmt: skip
    page = staff_client.get(reverse("admin:runs_run_changelist")).content.decode()
    header = page.split("<thead>")[1].split("</thead>")[0]
    assert header.count("<th") <= 11
    assert "verdict turn: cap (no done), loop ×2, budget ×1" in page


def test_admin_judgments_first_column_link_has_text(staff_client, acme):
    run = make_run(acme)
    judgment = Judgment.objects.create(run=run, verdict="pass", reason="ok")
    page = staff_client.get(reverse("admin:judge_judgment_changelist")).content.decode()
    change = reverse("admin:judge_judgment_change", args=[judgment.pk])
    link = page.split(f'href="{change}"', 1)[1].split("</a>")[0]
    assert link.strip(">").strip()


def test_admin_is_branded_and_staff_have_a_link_to_it(staff_client, alice_client):
    assert "Pilothouse admin" in staff_client.get(reverse("admin:index")).content.decode()
    assert "Django administration" not in staff_client.get(reverse("admin:index")).content.decode()
    assert 'id="nav-admin"' in staff_client.get("/sessions/").content.decode()
    assert 'id="nav-admin"' not in alice_client.get("/sessions/").content.decode()


# --- 9: the small things ------------------------------------------------------------------------------------------


def test_a_missing_page_is_styled_and_links_back(alice_client):
    response = alice_client.get("/runs/run_doesnotexist/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "css/app.css" in html and "Back to runs" in html


def test_pages_have_a_favicon(alice_client):
    assert "img/favicon.svg" in alice_client.get("/").content.decode()


def test_prices_read_as_money():
    assert format_usd(Decimal("49.0")) == "$49.00"
    assert format_usd(Decimal("1.8750")) == "$1.875"
    assert format_usd(Decimal("0.3000")) == "$0.30"


def test_admin_price_list_shows_dollars(staff_client):
    page = staff_client.get(reverse("admin:agent_platform_price_changelist")).content.decode()
    if Price.objects.exists():  # seeded by migration 0003
        assert "$" in page and ".0000<" not in page


def test_signals_are_shown_in_words(alice_client, acme):
    run = make_run(acme, status=Run.Status.SUCCEEDED, signals={
        "turns": 2, "max_turns": 30, "failures_max": False, "verdict_turn": "none", "verdict_followed": None})  # fmt: skip
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "Failure budget reached" in page and "no verdict turn" in page
    assert ">failures_max<" not in page and ">verdict_followed<" not in page


def test_usage_chart_labels_today(alice_client, acme):
    page = alice_client.get("/usage/?days=30").content.decode()
    assert ">today</text>" in page


def test_runs_list_has_one_new_run_button(alice_client, acme):
    page = alice_client.get("/").content.decode()
    assert page.count(">New run</a>") == 1


def test_prices_in_the_runs_data_table_read_as_prices(alice_client, acme):
    data = {"items": [{"name": "Lamp", "price": 49.0}, {"name": "Mug", "price": 14.5}, {"name": "Pen", "price": 9.99}]}
    run = make_run(acme, status=Run.Status.SUCCEEDED, success=True, data=data)
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    table = page.split('id="data-table"')[1].split("</table>")[0]
    assert '<td class="num">49.00</td>' in table and '<td class="num">14.50</td>' in table
    assert '<td class="num">9.99</td>' in table and ">49.0<" not in table


def test_a_follow_up_does_not_wait_for_a_queued_run_that_was_lost_long_ago(acme, settings):
    from datetime import timedelta

    from django.utils import timezone

    lost = make_run(acme)
    Run.objects.filter(pk=lost.pk).update(
        created_at=timezone.now() - timedelta(seconds=2 * settings.RUN_TIME_LIMIT_SECONDS + 60)
    )
    assert wait_behind_earlier_run(make_run(acme, session=lost.session).pk) is False


def test_the_timeline_says_when_a_run_moved_to_another_worker_and_escapes_the_names(alice_client, acme):
    run = make_run(acme, status=Run.Status.RUNNING)
    emit(run, "run.worker_lost", {"worker": "celery@<b>gone</b>", "cause": "worker_lost", "checkpoint_turn": 5})
    emit(run, "run.recovered", {"worker": "celery@next", "from_turn": 5, "cause": "worker_lost"})
    emit(run, "run.handed_over", {"worker": "celery@next", "cause": "drain", "checkpoint_turn": 7})
    page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert "Worker lost · celery@&lt;b&gt;gone&lt;/b&gt; · handed over after turn 5" in page
    assert "Continued on celery@next from turn 5 · its worker was lost" in page
    assert "Worker stopping · celery@next · handed over after turn 7" in page
