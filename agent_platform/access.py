"""Who may see what in the web UI: a user reaches a workspace's objects only through a membership."""

from django.contrib.auth.models import User
from django.http import Http404, HttpRequest

from .models import Membership, Workspace, workspaces_of

SESSION_KEY = "workspace_id"


class OperatorRequest(HttpRequest):
    """A request to an operator page behind login_required: its `user` is a signed-in user, never anonymous."""

    user: User


def current_workspace(request: HttpRequest) -> Workspace:
    """The workspace the user is working in (chosen in the header, kept in the session); 404 without membership."""
    workspaces = workspaces_of(request.user)
    chosen = request.session.get(SESSION_KEY)
    workspace = workspaces.filter(pk=chosen).first() if chosen else None
    if workspace is None:
        workspace = workspaces.order_by("name").first()
    if workspace is None:
        raise Http404("You are not a member of any workspace.")
    request.session[SESSION_KEY] = workspace.pk
    return workspace


def choose_workspace(request: HttpRequest, slug: str) -> Workspace:
    workspace = workspaces_of(request.user).filter(slug=slug).first()
    if workspace is None:
        raise Http404("No such workspace.")
    request.session[SESSION_KEY] = workspace.pk
    return workspace


def is_owner(user: User, workspace: Workspace) -> bool:
    return Membership.objects.filter(user=user, workspace=workspace, role=Membership.Role.OWNER).exists()
