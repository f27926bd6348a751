"""What the official v4 client raises against Pilothouse: another workspace's key, a bad key, a refused field, and a
feature Pilothouse's v4 API does not serve, each a BrowserUseError with a message that says so."""

import uuid

import httpx
import pytest
from browser_use_sdk.v4 import BrowserUse, BrowserUseError

from tests.support import live
from tests.support.factories import make_run

asgi_server = live.asgi_server

pytestmark = pytest.mark.usefixtures("transactional_db")


def sdk(asgi_server: str, key: str) -> BrowserUse:
    return BrowserUse(api_key=key, base_url=f"{asgi_server}/api/v4", max_retries=0)


def test_another_workspaces_key_is_refused_and_a_bad_key_is_401(asgi_server, acme, acme_key, umbrella_key):
    run = make_run(acme, status="succeeded", output="Done.")
    assert sdk(asgi_server, acme_key).runs.get(run.uuid).result == "Done."
    with pytest.raises(BrowserUseError) as foreign:
        sdk(asgi_server, umbrella_key).runs.get(run.uuid)
    assert foreign.value.status_code == 404 and "not found" in foreign.value.message
    with pytest.raises(BrowserUseError) as status:
        sdk(asgi_server, umbrella_key).runs.status(run.public_id)
    assert status.value.status_code == 404
    with pytest.raises(BrowserUseError) as bad:
        sdk(asgi_server, "ph_nope_nope").sessions.list()
    assert bad.value.status_code == 401 and "X-Browser-Use-API-Key" in bad.value.message
    # The v1 header works on v4 too, with the same key.
    bearer = httpx.get(f"{asgi_server}/api/v4/runs/{run.uuid}/status", headers={"Authorization": f"Bearer {acme_key}"})
    assert bearer.status_code == 200 and bearer.json() == {"status": "completed"}


@pytest.mark.parametrize(
    ("call", "feature"),
    [
        (lambda client: client.browsers.create(extension_ids=[str(uuid.uuid4())]), "browser extensions"),
        (lambda client: client.extensions.list(), "browser extensions"),
        (lambda client: client.integrations.list(), "integrations"),
        (lambda client: client.runs.create("t", agentmail=True), "AgentMail"),
    ],
)
def test_a_missing_feature_raises_the_sdks_error_naming_it(asgi_server, acme_key, call, feature):
    with pytest.raises(BrowserUseError) as caught:
        call(sdk(asgi_server, acme_key))
    assert caught.value.status_code == 501
    assert caught.value.message.startswith(f"Pilothouse's v4 API does not serve {feature}")


def test_refused_fields_are_422_named_as_v4_names_them(asgi_server, acme_key):
    client = sdk(asgi_server, acme_key)
    with pytest.raises(BrowserUseError) as schema:
        client.runs.create("t", output_schema={"type": "string"})
    assert schema.value.status_code == 422 and schema.value.message.startswith("outputSchema:")
    with pytest.raises(BrowserUseError) as budget:
        client.runs.create("t", max_cost_usd="-1")
    assert budget.value.status_code == 422 and budget.value.message.startswith("maxCostUsd:")
    with pytest.raises(BrowserUseError) as unknown:
        client.runs.create("t", colour="blue")
    assert unknown.value.status_code == 422 and "colour" in unknown.value.message
    with pytest.raises(BrowserUseError) as session:
        client.runs.create("t", session_id=uuid.uuid4())
    assert session.value.status_code == 404
    missing = httpx.get(f"{asgi_server}/api/v4/nothing/here", headers={"X-Browser-Use-API-Key": acme_key})
    assert missing.status_code == 404 and "not a path" in missing.json()["detail"]
