"""The webhooks API: a workspace's endpoints, their deliveries with every attempt's response code, and resending."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict, StrictStr

from agent_platform.api import ERROR_RESPONSES, ApiRequest, PathId
from agent_platform.lookup import find

from . import services
from .models import Delivery, Endpoint, EventType

router = Router(tags=["webhooks"])
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
EndpointPathId = Annotated[str, PathId("webhook endpoint", "whe")]
DeliveryPathId = Annotated[str, PathId("webhook delivery", "whd")]


class EndpointIn(Schema):
    model_config = ConfigDict(extra="forbid")

    url: StrictStr = Field(
        description="A public http(s) URL (private addresses only where the browser may reach them)."
    )
    events: list[EventType] = Field(description="The events to send: " + ", ".join(EventType.values) + ".")


class EndpointOut(Schema):
    id: str
    url: str
    events: list[str]
    active: bool
    signature_scheme: Literal["standard", "legacy"] = Field(
        description="standard: webhook-signature (Standard Webhooks); legacy: Pilothouse-Signature, until rotated."
    )
    previous_secret_signs_until: datetime | None = Field(
        description="After a rotation, the previous secret signs beside the new one until then."
    )
    created_at: datetime


class EndpointCreatedOut(EndpointOut):
    secret: str = Field(description="The signing secret (whsec_ and base64), shown in this response only.")


class EndpointListOut(Schema):
    endpoints: list[EndpointOut]


class AttemptOut(Schema):
    number: int
    attempted_at: datetime
    response_code: int | None
    error: str | None
    duration_ms: int


class DeliveryOut(Schema):
    id: str
    endpoint_id: str
    event_type: str
    status: Literal["pending", "delivered", "failed"]
    attempts: int
    response_code: int | None
    created_at: datetime
    next_attempt_at: datetime | None
    delivered_at: datetime | None
    resend_of: str | None
    attempt_log: list[AttemptOut]


class DeliveryListOut(Schema):
    deliveries: list[DeliveryOut]


def endpoint_out(endpoint: Endpoint) -> dict[str, Any]:
    return {
        "id": endpoint.public_id,
        "url": endpoint.url,
        "events": endpoint.events,
        "active": endpoint.active,
        "signature_scheme": endpoint.secret_scheme,
        "previous_secret_signs_until": endpoint.retiring_until if endpoint.retiring_secret else None,
        "created_at": endpoint.created_at,
    }


def delivery_out(delivery: Delivery) -> dict[str, Any]:
    return {
        "id": delivery.public_id,
        "endpoint_id": delivery.endpoint.public_id,
        "event_type": delivery.event_type,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "response_code": delivery.response_code,
        "created_at": delivery.created_at,
        "next_attempt_at": delivery.next_attempt_at,
        "delivered_at": delivery.delivered_at,
        "resend_of": delivery.resend_of.public_id if delivery.resend_of else None,
        "attempt_log": [
            {
                "number": a.number,
                "attempted_at": a.attempted_at,
                "response_code": a.response_code,
                "error": a.error or None,
                "duration_ms": a.duration_ms,
            }
            for a in delivery.attempt_log.all()
        ],
    }


def find_endpoint(request: ApiRequest, endpoint_id: str) -> Endpoint:
    return find(Endpoint.objects.for_workspace(request.workspace), endpoint_id, "webhook endpoint")


@router.post(
    "/webhooks/endpoints",
    response={201: EndpointCreatedOut, **ERROR_RESPONSES},
    summary="Add a webhook endpoint",
    description="Deliveries are JSON bodies signed per Standard Webhooks (headers webhook-id, webhook-timestamp and "
    "webhook-signature; verify with the standardwebhooks library and the secret returned here, see docs/webhooks.md). "
    "A URL on an internal address is refused.",
)
def create_endpoint(request: ApiRequest, payload: EndpointIn) -> Status[dict[str, Any]]:
    endpoint = services.create_endpoint(request.workspace, url=payload.url, events=list(payload.events))
    return Status(201, {**endpoint_out(endpoint), "secret": endpoint.secret})


@router.get("/webhooks/endpoints", response={200: EndpointListOut, **ERROR_RESPONSES}, summary="List webhook endpoints")
def list_endpoints(request: ApiRequest) -> dict[str, Any]:
    return {"endpoints": [endpoint_out(e) for e in Endpoint.objects.for_workspace(request.workspace)]}


@router.delete(
    "/webhooks/endpoints/{endpoint_id}", response={204: None, **ERROR_RESPONSES}, summary="Remove a webhook endpoint"
)
def delete_endpoint(request: ApiRequest, endpoint_id: EndpointPathId) -> Status[None]:
    services.delete_endpoint(find_endpoint(request, endpoint_id))
    return Status(204, None)


@router.post(
    "/webhooks/endpoints/{endpoint_id}/rotate-secret",
    response={200: EndpointCreatedOut, **ERROR_RESPONSES},
    summary="Rotate an endpoint's signing secret",
    description="A new Standard Webhooks secret (whsec_ and base64), shown in this response only. The previous "
    "secret signs beside it for 24 hours (a legacy one as Pilothouse-Signature, a standard one as a second "
    "webhook-signature), so the receiver switches without downtime.",
)
def rotate_secret(request: ApiRequest, endpoint_id: EndpointPathId) -> dict[str, Any]:
    endpoint = services.rotate_secret(find_endpoint(request, endpoint_id))
    return {**endpoint_out(endpoint), "secret": endpoint.secret}


@router.get(
    "/webhooks/endpoints/{endpoint_id}/deliveries",
    response={200: DeliveryListOut, **ERROR_RESPONSES},
    summary="Deliveries to an endpoint, newest first, with every attempt's response code",
)
def list_deliveries(
    request: ApiRequest,
    endpoint_id: EndpointPathId,
    limit: int = Query(50, ge=1, le=200),  # type: ignore[type-arg]  # ninja types its Query()/Header() defaults as generic
) -> dict[str, Any]:
    endpoint = find_endpoint(request, endpoint_id)
    deliveries = (
        endpoint.deliveries.select_related("endpoint", "resend_of").prefetch_related("attempt_log").all()[:limit]
    )
    return {"deliveries": [delivery_out(d) for d in deliveries]}


@router.post(
    "/webhooks/deliveries/{delivery_id}/resend",
    response={202: DeliveryOut, **ERROR_RESPONSES},
    summary="Send a delivery's event again",
    description="A new delivery of the same event, with its own id, timestamp and retries.",
)
def resend_delivery(request: ApiRequest, delivery_id: DeliveryPathId) -> Status[dict[str, Any]]:
    delivery = find(Delivery.objects.filter(endpoint__workspace=request.workspace), delivery_id, "webhook delivery")
    return Status(202, delivery_out(services.resend(delivery)))
