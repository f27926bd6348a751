"""The demo as `make run` serves it on a port other than the default: the scripted model, started as its own process
with the demo site's address, sends a follow-up run (no start URL) to that address, and the egress policy, which
allows the demo site's port only, lets it through."""

from collections.abc import Iterator
from decimal import Decimal

import pytest

from agent_platform.models import ModelRequest
from demo_site.views import PRODUCTS
from runs.models import Run
from tests.support import demo
from tests.support.factories import make_run
from tests.support.launching import enqueue, events, finished
from tests.support.workers import WorkerProcess

demo_base_url = demo.demo_base_url
scripted_model = demo.scripted_model

QUEUE = "demo-follow-up-tests"

pytestmark = [pytest.mark.worker, pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


@pytest.fixture
def demo_worker(
    django_db_blocker, clean_broker, demo_base_url: str, scripted_model: str, tmp_path
) -> Iterator[WorkerProcess]:
    with demo.demo_worker(django_db_blocker, demo_base_url, scripted_model, tmp_path, QUEUE) as worker:
        yield worker


def test_a_follow_up_run_on_a_non_default_demo_port_reaches_the_demo_shop(acme, demo_base_url, demo_worker):
    # A cap no real request fits under: the scripted model's requests bill nothing, so it never applies to them.
    first = enqueue(
        make_run(
            acme,
            task="List the products on the first page of the demo shop.",
            start_url=f"{demo_base_url}demo/",
            max_cost_usd=Decimal("0.0001"),
        ),
        queue=QUEUE,
    )
    first = finished(first)
    assert first.status == Run.Status.SUCCEEDED, first.error_message

    # A follow-up names no start URL: the scripted model must take the demo site's address from its configuration.
    follow_up = enqueue(
        make_run(acme, session=first.session, task="List the products of the demo shop again, with their prices."),
        queue=QUEUE,
    )
    follow_up = finished(follow_up)

    assert follow_up.status == Run.Status.SUCCEEDED, follow_up.error_message
    navigations = [event.payload["input"] for event in events(follow_up, "agent.tool_use")]
    assert navigations[0] == {"url": f"{demo_base_url}demo/shop/"}
    assert events(follow_up, "network.blocked") == []
    assert all(product.name in follow_up.output for product in PRODUCTS[:4])
    requests = ModelRequest.objects.filter(run__in=[first, follow_up])
    assert requests.count() == first.usage_requests + follow_up.usage_requests > 0
    assert set(requests.values_list("scripted", "cost_usd", "unpriced")) == {(True, Decimal(0), False)}
    assert (first.cost_usd, follow_up.cost_usd) == (Decimal(0), Decimal(0))
