"""Workspace settings for webhooks: endpoints (added and rotated by owners), their deliveries, resending."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from agent_platform.access import OperatorRequest, current_workspace, is_owner
from agent_platform.errors import ServiceError
from agent_platform.models import Workspace

from . import services
from .models import Delivery, Endpoint, EventType

DELIVERIES_SHOWN = 50


def page(
    request: OperatorRequest,
    workspace: Workspace,
    *,
    error: ServiceError | None = None,
    values: QueryDict | None = None,
    new_endpoint: Endpoint | None = None,
    rotated_endpoint: Endpoint | None = None,
) -> HttpResponse:
    endpoints = Endpoint.objects.for_workspace(workspace)
    deliveries = (
        Delivery.objects.filter(endpoint__workspace=workspace)
        .select_related("endpoint")
        .prefetch_related("attempt_log")[:DELIVERIES_SHOWN]
    )
    context = {
        "workspace": workspace,
        "endpoints": endpoints,
        "deliveries": deliveries,
        "event_types": EventType.values,
        "can_manage": is_owner(request.user, workspace),
        "error": error,
        "values": values,
        "new_endpoint": new_endpoint,
        "rotated_endpoint": rotated_endpoint,
        "now": timezone.now(),
    }
    response = render(request, "webhooks/settings.html", context, status=error.status if error else 200)
    response["Cache-Control"] = "no-store"
    return response


@login_required
def webhook_settings(request: OperatorRequest) -> HttpResponse:
    return page(request, current_workspace(request))


@login_required
@require_POST
def endpoint_create(request: OperatorRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if not is_owner(request.user, workspace):
        raise PermissionDenied("Only a workspace owner manages webhook endpoints.")
    try:
        endpoint = services.create_endpoint(
            workspace, url=request.POST.get("url", ""), events=request.POST.getlist("events"), created_by=request.user
        )
    except ServiceError as error:
        return page(request, workspace, error=error, values=request.POST)
    # The secret is shown on this response only.
    return page(request, workspace, new_endpoint=endpoint)


@login_required
@require_POST
def endpoint_delete(request: OperatorRequest, endpoint_id: str) -> HttpResponse:
    workspace = current_workspace(request)
    if not is_owner(request.user, workspace):
        raise PermissionDenied("Only a workspace owner manages webhook endpoints.")
    endpoint = Endpoint.objects.for_workspace(workspace).filter(public_id=endpoint_id).first()
    if endpoint is None:
        raise Http404("No such endpoint.")
    services.delete_endpoint(endpoint)
    messages.success(request, f"Endpoint {endpoint.url} is removed.")
    return redirect("webhooks:settings")


@login_required
@require_POST
def endpoint_rotate(request: OperatorRequest, endpoint_id: str) -> HttpResponse:
    workspace = current_workspace(request)
    endpoint = Endpoint.objects.for_workspace(workspace).filter(public_id=endpoint_id).first()
    if endpoint is None:
        raise Http404("No such endpoint.")
    if not is_owner(request.user, workspace):
        raise PermissionDenied("Only a workspace owner rotates webhook secrets.")
    # The new secret is shown on this response only.
    return page(request, workspace, rotated_endpoint=services.rotate_secret(endpoint))


@login_required
@require_POST
def delivery_resend(request: OperatorRequest, delivery_id: str) -> HttpResponse:
    workspace = current_workspace(request)
    delivery = Delivery.objects.filter(public_id=delivery_id, endpoint__workspace=workspace).first()
    if delivery is None:
        raise Http404("No such delivery.")
    copy = services.resend(delivery)
    messages.success(request, f"{delivery.event_type} sent again as {copy.public_id}.")
    return redirect("webhooks:settings")
