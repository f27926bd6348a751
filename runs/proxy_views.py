"""The settings page's Proxies section: owners add a proxy (its URL sealed at once) and delete one."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace, is_owner
from agent_platform.errors import ServiceError

from . import proxies

SETTINGS = "platform:settings"


@login_required
@require_POST
def proxy_create(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if not is_owner(request.user, workspace):
        raise PermissionDenied("Only a workspace owner manages proxies.")
    try:
        proxy = proxies.create_proxy(
            workspace, name=request.POST.get("name", ""), url=request.POST.get("url", ""), created_by=request.user
        )
    except ServiceError as error:
        # the URL is not put back into the form: it may hold a password (the message never repeats it)
        messages.error(request, f"The proxy was not added: {error.message}")
        return redirect(SETTINGS)
    messages.success(request, f"Proxy {proxy.name} ({proxy.address}) is added; its URL is sealed.")
    return redirect(SETTINGS)


@login_required
@require_POST
def proxy_delete(request: OperatorRequest, proxy_id: str) -> HttpResponse:
    workspace = current_workspace(request)
    if not is_owner(request.user, workspace):
        raise PermissionDenied("Only a workspace owner manages proxies.")
    proxy = proxies.find_usable(workspace, proxy_id)
    if proxy is None:
        raise Http404("No such proxy.")
    proxies.delete_proxy(proxy)
    messages.success(request, f"Proxy {proxy.name} is deleted.")
    return redirect(SETTINGS)
