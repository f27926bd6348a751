"""The batch pages and the runs list's batch column: a report whose expected data names fields after dict methods,
the links from a batch to its runs and back, and the runs list narrowed to (or without) batch runs."""

from decimal import Decimal

import pytest
from django.utils import timezone

from evals.models import Batch, BatchRun
from judge.models import Judgment
from runs.models import Run
from tests.support.factories import make_run

pytestmark = pytest.mark.django_db

# Field names that are also dict methods: a template reading `fields.items` would get the key, not the method.
EXPECTED = {"items": ["kettle", "toaster"], "keys": 2, "values": "euros"}


def finish_batch_runs(batch: Batch, data: object) -> list[Run]:
    runs = []
    for item in BatchRun.objects.filter(batch=batch).select_related("run"):
        Run.objects.filter(pk=item.run_id).update(
            status=Run.Status.SUCCEEDED,
            success=True,
            data=data,
            signals={"turns": 2, "max_turns": 10},
            cost_usd=Decimal("0.01"),
            started_at=timezone.now(),
            finished_at=timezone.now(),
        )
        Judgment.objects.create(run_id=item.run_id, verdict="pass", reason="scripted", model="j")
        runs.append(Run.objects.get(pk=item.run_id))
    return runs


@pytest.fixture
def scored_batch(api) -> Batch:
    created = api.post(
        "/batches",
        {"name": "fields", "tasks": [{"task": "List the products.", "expected": EXPECTED}], "repeats": 2},
    )
    assert created.status_code == 201, created.content
    batch = Batch.objects.get(public_id=created.json()["id"])
    finish_batch_runs(batch, {**EXPECTED, "values": "dollars"})
    return batch


def test_a_report_scores_fields_named_items_keys_and_values(alice_client, scored_batch):
    page = alice_client.get(f"/batches/{scored_batch.public_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    # every field by name with its own rate: items and keys matched in both runs, values in neither
    assert '<span class="faint mono">items</span> 100.0%' in html
    assert '<span class="faint mono">keys</span> 100.0%' in html
    assert '<span class="faint mono">values</span> 0.0%' in html


def test_a_batch_page_links_each_of_its_runs(alice_client, scored_batch):
    html = alice_client.get(f"/batches/{scored_batch.public_id}/").content.decode()
    for item in BatchRun.objects.filter(batch=scored_batch):
        assert f'href="/runs/{item.run.public_id}/"' in html
    assert 'id="batch-runs"' in html


def test_a_batch_run_page_links_its_batch(alice_client, scored_batch):
    run = BatchRun.objects.filter(batch=scored_batch).first().run
    html = alice_client.get(f"/runs/{run.public_id}/").content.decode()
    assert f'href="/batches/{scored_batch.public_id}/"' in html


def test_the_runs_list_shows_a_batch_column_and_filters_by_batch(alice_client, acme, scored_batch):
    alone = make_run(acme, task="A run of its own.")
    batch_runs = [item.run for item in BatchRun.objects.filter(batch=scored_batch)]

    html = alice_client.get("/").content.decode()
    assert "<th>Batch</th>" in html
    assert f'href="/batches/{scored_batch.public_id}/"' in html

    only = alice_client.get(f"/?batch={scored_batch.public_id}").content.decode()
    assert all(f"row-{run.public_id}" in only for run in batch_runs)
    assert f"row-{alone.public_id}" not in only

    without = alice_client.get("/?batch=none").content.decode()
    assert f"row-{alone.public_id}" in without
    assert not any(f"row-{run.public_id}" in without for run in batch_runs)

    from_any = alice_client.get("/?batch=any").content.decode()
    assert f"row-{alone.public_id}" not in from_any
    assert all(f"row-{run.public_id}" in from_any for run in batch_runs)


def test_the_batch_filter_offers_the_workspaces_batches_only(alice_client, charlie_client, scored_batch):
    assert f'value="{scored_batch.public_id}"' in alice_client.get("/").content.decode()
    assert scored_batch.public_id not in charlie_client.get("/").content.decode()
    # another workspace's batch id filters to nothing, and is not named back as an option
    shown = charlie_client.get(f"/?batch={scored_batch.public_id}").content.decode()
    assert "No runs match these filters." in shown


def test_triage_the_batch_page_the_runs_list_and_the_run_page_agree_on_an_agents_verdict(alice_client, scored_batch):
    """A run whose agent said neither success nor failure (it ran out of turns) and that the judge passed is an
    underclaim in triage: every page says "no verdict" of the agent, none calls it a failure."""
    silent, claimed = [item.run for item in BatchRun.objects.filter(batch=scored_batch).select_related("run")]
    Run.objects.filter(pk=silent.pk).update(status=Run.Status.FAILED, success=None, error_code="max_turns")
    Run.objects.filter(pk=claimed.pk).update(success=False)
    Judgment.objects.filter(run=claimed).update(verdict="pass")  # an underclaim too, with the agent's failure

    def said(html: str, run: Run) -> str:
        row = html[html.index(run.public_id) :]
        return row[row.index("data-agent-verdict=") :].split('"')[1]

    pages = {
        "triage": alice_client.get("/triage/").content.decode(),
        "batch": alice_client.get(f"/batches/{scored_batch.public_id}/").content.decode(),
        "runs list": alice_client.get("/").content.decode(),
    }
    for where, html in pages.items():
        assert said(html, silent) == "no verdict", where
        assert said(html, claimed) == "failure", where
    for run, verdict in ((silent, "no verdict"), (claimed, "failure")):
        run_page = alice_client.get(f"/runs/{run.public_id}/").content.decode()
        assert f'data-agent-verdict="{verdict}"' in run_page
