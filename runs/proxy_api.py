"""The proxies API: a workspace's own upstream proxies, added with a URL that is sealed at once and never shown back."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict, StrictStr

from agent_platform.api import ERROR_RESPONSES, ApiRequest, PathId
from agent_platform.errors import NotFound

from . import proxies
from .models import Proxy

router = Router(tags=["proxies"])
# Ids in this router's paths, as the document shows them (agent_platform.api.PathId).
ProxyPathId = Annotated[str, PathId("proxy", "proxy")]


class ProxyIn(Schema):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"name": "Frankfurt exit", "url": "http://alice:s3cret@proxy.example.com:3128"},
                {"name": "Residential SOCKS", "url": "socks5://user:pass@socks.example.net:1080"},
            ]
        },
    )

    name: StrictStr = Field(description="A name to recognise it by (at most 100 characters).")
    url: StrictStr = Field(
        description="scheme://[user:password@]host:port with scheme http, https (TLS to the proxy) or socks5; no "
        "path or query. User name and password are percent-encoded. Sealed at rest; never returned."
    )


class ProxyOut(Schema):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "proxy_0a1b2c3d4e5f6g7h8i9j0k1l",
                    "name": "Frankfurt exit",
                    "scheme": "http",
                    "host": "proxy.example.com",
                    "port": 3128,
                    "has_credentials": True,
                    "created_at": "2026-12-02T19:40:00Z",
                }
            ]
        }
    )

    id: str
    name: str
    scheme: Literal["http", "https", "socks5"]
    host: str
    port: int
    has_credentials: bool = Field(description="Whether the URL carried a user name (the credentials are not shown).")
    created_at: datetime


class ProxyListOut(Schema):
    proxies: list[ProxyOut]


def find_proxy(request: ApiRequest, proxy_id: str) -> Proxy:
    proxy = proxies.find_usable(request.workspace, proxy_id)
    if proxy is None:
        raise NotFound(f"No proxy '{proxy_id}' in this workspace.")
    return proxy


@router.post(
    "/proxies",
    response={201: ProxyOut, **ERROR_RESPONSES},
    summary="Add a proxy",
    description="A run launched with this proxy_id goes out through it: the egress guard checks every destination "
    "first, then connects through the proxy (HTTP CONNECT, over TLS for https://, or SOCKS5). The URL, with its "
    "credentials, is sealed under SECRETS_KEY; responses show scheme, host and port only. A proxy on a private "
    "address is refused unless PROXY_ALLOWED_PRIVATE_HOSTS lists it.",
)
def create_proxy(request: ApiRequest, payload: ProxyIn) -> Status[dict[str, Any]]:
    proxy = proxies.create_proxy(request.workspace, name=payload.name, url=payload.url)
    return Status(201, proxies.proxy_out(proxy))


@router.get("/proxies", response={200: ProxyListOut, **ERROR_RESPONSES}, summary="List the workspace's proxies")
def list_proxies(request: ApiRequest) -> dict[str, Any]:
    rows = Proxy.objects.for_workspace(request.workspace).usable()
    return {"proxies": [proxies.proxy_out(proxy) for proxy in rows]}


@router.delete(
    "/proxies/{proxy_id}",
    response={204: None, **ERROR_RESPONSES},
    summary="Delete a proxy",
    description="Forgets the URL and its credentials. Sessions that used it do not fall back to going out directly: "
    "their follow-ups and queued runs fail with a message naming the deleted proxy.",
)
def delete_proxy(request: ApiRequest, proxy_id: ProxyPathId) -> Status[None]:
    proxies.delete_proxy(find_proxy(request, proxy_id))
    return Status(204, None)
