"""The batch pages and the runs list's batch column: a report whose expected data names fields after dict methods,
the links from a batch to its runs and back, and the runs list narrowed to (or without) batch runs."""

from decimal import Decimal

import pytest
from django.utils import timezone

from evals.models import Batch, BatchRun
from judge.models import Judgment
from runs.models import Run

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
