"""The batch page in real Chromium against Daphne: it follows its batch live (a run ends, the batch finishes: the
page says so without a reload) and links each of its runs."""

import os
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.utils import timezone
from playwright.sync_api import expect

from evals.models import Batch, BatchConfig, BatchRun, BatchTask
from evals.services import cancel_batch, fill_slots
from runs.models import Run
from tests.support import live
from tests.support.factories import make_run
from tests.support.live import emit, open_subscribed, signed_in_page

asgi_server = live.asgi_server
chromium = live.chromium

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def in_thread(function, *args):
    """Run ORM work that pushes live from another thread: this one holds Playwright's event loop."""

    def call():
        try:
            return function(*args)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


def running_batch(workspace, runs: int) -> tuple[Batch, list[Run]]:
    """A batch whose planned runs are all launched and running (made as rows: no worker takes them)."""
    batch = Batch.objects.create(workspace=workspace, name="Live batch", judge=False, repeats=runs, concurrency=runs)
    task = BatchTask.objects.create(batch=batch, position=0, task="Find the kettle's price.")
    config = BatchConfig.objects.create(batch=batch, position=0, model="claude-sonnet-5-5", max_turns=30)
    made = []
    for repeat in range(runs):
        run = make_run(workspace, task=task.task, status=Run.Status.RUNNING, started_at=timezone.now())
        BatchRun.objects.create(batch=batch, task=task, config=config, repeat=repeat, run=run)
        made.append(run)
    return batch, made


def finish(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.SUCCEEDED, success=True, finished_at=timezone.now(), signals={"turns": 2, "max_turns": 30}
    )
    emit(run, "run.finished", {"status": "succeeded", "success": True, "error_code": None, "error_message": None})


def test_the_batch_page_follows_its_runs_and_says_the_batch_finished_without_a_reload(
    asgi_server, chromium, alice, acme
):
    batch, (first, second) = running_batch(acme, 2)
    page = signed_in_page(chromium, asgi_server, alice)
    open_subscribed(page, f"{asgi_server}/batches/{batch.public_id}/")
    expect(page.locator("#batch-status")).to_have_text("running")
    expect(page.locator("#rejudge-form")).to_be_hidden()
    page.evaluate("window.notReloaded = true")

    # Each run links to its page, and a run's end shows in its row.
    for run in (first, second):
        expect(page.locator(f"#batch-runs a[href='/runs/{run.public_id}/']")).to_have_text(run.public_id)
    finish(first)
    expect(page.locator(f"#batch-runs tr[data-run-id='{first.public_id}'] .badge").first).to_have_text("succeeded")
    expect(page.locator("#batch-status")).to_have_text("running")

    # The last run ends and the batch is moved on (as the worker's advance_batch does): the page says finished.
    finish(second)
    in_thread(fill_slots, batch.pk)
    assert Batch.objects.get(pk=batch.pk).status == Batch.Status.FINISHED
    expect(page.locator("#batch-status")).to_have_text("finished")
    expect(page.locator("#batch-totals")).to_contain_text("2 / 2")
    expect(page.locator("#rejudge-form")).to_be_visible()
    expect(page.get_by_role("button", name="Cancel batch")).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True
    page.context.close()


def test_a_cancelled_batch_says_so_live(asgi_server, chromium, alice, acme):
    batch, _ = running_batch(acme, 1)
    page = signed_in_page(chromium, asgi_server, alice)
    open_subscribed(page, f"{asgi_server}/batches/{batch.public_id}/")
    page.evaluate("window.notReloaded = true")
    in_thread(cancel_batch, batch)
    expect(page.locator("#batch-status")).to_have_text("cancelled")
    assert page.evaluate("window.notReloaded") is True
    page.context.close()
