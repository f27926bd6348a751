"""The workspace settings page's Proxies section: a template tag, so the platform's settings view (which may not
import runs) shows the proxies of runs without knowing of them."""

from typing import Any

from django import template

from agent_platform.models import Workspace
from runs.models import Proxy

register = template.Library()


@register.inclusion_tag("runs/_proxies.html", takes_context=True)
def proxies_section(context: template.Context, workspace: Workspace, can_manage: bool) -> dict[str, Any]:
    return {
        "proxies": list(Proxy.objects.for_workspace(workspace).usable()),
        "can_manage": can_manage,
        "csrf_token": context.get("csrf_token"),
    }
