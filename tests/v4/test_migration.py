"""Migration 0007 gives the sessions and runs that existed before it a UUID each, all distinct."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from agent_platform.models import Workspace

pytestmark = pytest.mark.usefixtures("transactional_db")

BEFORE = [("runs", "0006_run_idempotency_fingerprint")]
AFTER = [("runs", "0007_browser_use_v4")]


@pytest.mark.slow
def test_rows_made_before_the_migration_get_distinct_uuids():
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    # Made with today's model before going back: undoing runs' migrations undoes agent_platform's that follow them.
    workspace = Workspace.objects.create(name="Old", slug="old")
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        sessions = [old.get_model("runs", "Session").objects.create(workspace_id=workspace.pk) for _ in range(3)]
        for session in sessions:
            for _ in range(2):
                old.get_model("runs", "Run").objects.create(
                    workspace_id=workspace.pk, session=session, task="t", model="m"
                )

        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new = executor.loader.project_state(AFTER).apps
        session_uuids = list(new.get_model("runs", "Session").objects.values_list("uuid", flat=True))
        run_uuids = list(new.get_model("runs", "Run").objects.values_list("uuid", flat=True))
        assert len(session_uuids) == 3 and len(run_uuids) == 6
        assert None not in session_uuids + run_uuids
        assert len(set(session_uuids + run_uuids)) == 9
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(leaves)
