"""Small builders for rows the tests need, with defaults a real launch would give."""

from django.conf import settings

from agent_platform.models import Workspace
from runs.models import Run, Session


def make_session(workspace: Workspace, **fields) -> Session:
    return Session.objects.create(workspace=workspace, **fields)


def make_run(workspace: Workspace, session: Session | None = None, **fields) -> Run:
    session = session or make_session(workspace)
    fields.setdefault("task", "List the products on the first page of the shop.")
    # Today's default model, so runtime tests meet what it refuses (forced tools, sampling, thinking off...).
    fields.setdefault("model", settings.DEFAULT_MODEL)
    return Run.objects.create(workspace=workspace, session=session, **fields)
