"""The judge's place: its card on the run page says the latest verdict once, the run admin shows its column itself,
and its records keep the app label, tables and migrations they always had, wherever its package sat."""

import re
from datetime import timedelta

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone

from judge.models import Judgment, Outcome, OutcomeEvaluation
from runs.models import Run
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db


def judge_card(html: str) -> str:
    """The run page's judge card: from its opening tag to the next card."""
    start = html.index('<div class="card" id="judgments">')
    end = html.find('<div class="card"', start + 1)
    return html[start : end if end != -1 else None]


def verdict_badges(card: str) -> list[str]:
    return re.findall(r'<span class="badge v-(?:pass|fail|uncertain)">(\w+)</span>', card)


def test_the_judge_card_says_a_single_judgment_s_verdict_once(alice_client, acme):
    run = make_run(acme, judge=True, status=Run.Status.SUCCEEDED, success=True)
    Judgment.objects.create(run=run, verdict="pass", reason="The basket held the item.")
    card = judge_card(alice_client.get(f"/runs/{run.public_id}/").content.decode())
    assert verdict_badges(card) == ["pass"]
    assert "The basket held the item." in card


def test_the_judge_card_heads_with_the_latest_verdict_and_tags_each_earlier_reading(alice_client, acme):
    run = make_run(acme, judge=True, status=Run.Status.SUCCEEDED, success=True)
    earlier = timezone.now() - timedelta(minutes=5)
    Judgment.objects.create(run=run, verdict="pass", reason="First reading.", judged_at=earlier)
    Judgment.objects.create(run=run, verdict="fail", reason="Second reading.")
    card = judge_card(alice_client.get(f"/runs/{run.public_id}/").content.decode())
    # the head's badge is the latest reading's, the earlier reading carries its own; nothing is said twice
    assert verdict_badges(card) == ["fail", "pass"]
    assert card.index("Second reading.") < card.index("First reading.")


def test_the_run_admin_shows_the_latest_verdict_and_filters_by_it(admin_client, acme):
    judged = make_run(acme, status=Run.Status.SUCCEEDED)
    Judgment.objects.create(run=judged, verdict="uncertain", reason="Could not tell.")
    unjudged = make_run(acme, status=Run.Status.SUCCEEDED)
    page = admin_client.get("/admin/runs/run/?judge_verdict=uncertain").content.decode()
    assert judged.public_id in page and unjudged.public_id not in page
    assert '<td class="field-judge_verdict">uncertain</td>' in page
    page = admin_client.get("/admin/runs/run/?judge_verdict=unjudged").content.decode()
    assert unjudged.public_id in page and judged.public_id not in page
    change = admin_client.get(f"/admin/runs/run/{judged.pk}/change/").content.decode()
    assert f"/admin/judge/judgment/?run__id__exact={judged.pk}" in change


def test_the_judge_keeps_its_label_tables_and_migrations():
    config = apps.get_app_config("judge")
    assert config.name == "judge"
    assert [model._meta.db_table for model in (Judgment, Outcome, OutcomeEvaluation)] == [
        "judge_judgment",
        "judge_outcome",
        "judge_outcomeevaluation",
    ]
    loader = MigrationLoader(connection)
    # a database migrated when judge was a top-level app recorded ("judge", "0001_initial"): the same node today
    assert ("judge", "0001_initial") in loader.disk_migrations
    assert loader.disk_migrations["judge", "0001_initial"].__module__ == "judge.migrations.0001_initial"
    assert ("judge", "0001_initial") in loader.applied_migrations
