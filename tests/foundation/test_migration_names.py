"""Migrations named for what they do: each renamed one replaces the name it was first applied under, so a database
migrated before the rename finds nothing to apply, and a fresh one applies each exactly once."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

pytestmark = pytest.mark.django_db

RENAMED = {
    ("agent_platform", "0005_price_tiers"): "0005_i13_price_tiers",
    ("agent_platform", "0006_prices_2026_11"): "0006_i13_prices_2026_11",
    ("runs", "0003_run_effort_thinking"): "0003_i12_run_effort_thinking",
    ("runs", "0004_run_model_refused"): "0004_i12b_model_refused",
    ("runs", "0005_run_max_cost"): "0005_i13_run_max_cost",
    ("runs", "0006_run_idempotency_fingerprint"): "0006_i14_run_idempotency_fingerprint",
    ("evals", "0001_batches"): "0001_i17_batches",
    ("webhooks", "0001_webhooks"): "0001_i17_webhooks",
}


def test_every_renamed_migration_replaces_its_old_name_and_the_graph_holds():
    loader = MigrationLoader(connection)
    loader.graph.validate_consistency()
    loader.check_consistent_history(connection)
    for (app, name), old in RENAMED.items():
        assert loader.disk_migrations[app, name].replaces == [(app, old)]
        assert (app, old) not in loader.graph.nodes  # only the new name is a node; the old one points to it
    names = [name for app, name in loader.graph.nodes if app in {"agent_platform", "runs", "evals", "webhooks"}]
    assert not [name for name in names if "_i1" in name]


def test_a_database_migrated_under_the_old_names_has_nothing_to_apply():
    recorder = MigrationRecorder(connection)
    # the database as an install from before the rename left it: the old names recorded, the new ones never
    recorder.migration_qs.filter(app__in={app for app, _ in RENAMED}, name__in=[name for _, name in RENAMED]).delete()
    for (app, _), old in RENAMED.items():
        recorder.record_applied(app, old)
    executor = MigrationExecutor(connection)
    for key in RENAMED:
        assert key in executor.loader.applied_migrations
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
