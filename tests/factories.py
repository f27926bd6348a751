"""Small builders for rows the tests need, with defaults a real launch would give."""

from agent_platform.models import Workspace
from runs.models import Run, Session


def make_session(workspace: Workspace, **fields) -> Session:
    return Session.objects.create(workspace=workspace, **fields)


def make_run(workspace: Workspace, session: Session | None = None, **fields) -> Run:
    session = session or make_session(workspace)
    fields.setdefault("task", "List the products on the first page of the shop.")
    fields.setdefault("model", "claude-sonnet-4-6")
    return Run.objects.create(workspace=workspace, session=session, **fields)
