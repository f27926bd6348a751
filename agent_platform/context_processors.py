"""Template context shared by every page: the workspaces the signed-in user belongs to."""

from typing import Any

from django.http import HttpRequest

from .models import workspaces_of


def workspace(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"user_workspaces": workspaces_of(user)}
