"""Small builders for rows the tests need, with defaults a real launch would give, and today's prices (`prices`)."""

import importlib

import pytest
from django.conf import settings
from django.utils import timezone

from agent_platform.models import Workspace
from runs.models import Run, Session


def make_session(workspace: Workspace, **fields) -> Session:
    return Session.objects.create(workspace=workspace, **fields)


def make_run(workspace: Workspace, session: Session | None = None, **fields) -> Run:
    session = session or make_session(workspace)
    fields.setdefault("task", "List the products on the first page of the shop.")
    # Today's default model, so runtime tests meet what it refuses (forced tools, sampling, thinking off...).
    fields.setdefault("model", settings.DEFAULT_MODEL)
    # Admitted: a test hands the run to a worker itself (launching.enqueue), past the workspace's limits.
    fields.setdefault("admitted_at", timezone.now())
    return Run.objects.create(workspace=workspace, session=session, **fields)


@pytest.fixture
def prices(transactional_db):
    """Today's prices, as the price migration seeds them: an earlier transactional test's flush empties the table, and
    without prices every request costs $0, so no cap or budget is ever reached."""
    from django.apps import apps

    importlib.import_module("agent_platform.migrations.0006_prices_2026_11").seed_prices(apps, None)
