"""What the database knows of webhook deliveries, as Prometheus families read at scrape time."""

from collections.abc import Iterator

from django.db.models import Count
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from .models import Delivery


def delivery_families() -> Iterator[Metric]:
    """Deliveries that ended, by outcome (delivered or failed), and those still being attempted."""
    ended = CounterMetricFamily(
        "pilothouse_webhook_deliveries", "Webhook deliveries that ended, by outcome.", labels=["outcome"]
    )
    pending = GaugeMetricFamily("pilothouse_webhook_deliveries_pending", "Webhook deliveries still being attempted.")
    counts = dict(Delivery.objects.order_by().values_list("status").annotate(count=Count("id")))
    for outcome in (Delivery.Status.DELIVERED, Delivery.Status.FAILED):
        ended.add_metric([outcome.value], counts.get(outcome, 0))
    pending.add_metric([], counts.get(Delivery.Status.PENDING, 0))
    yield from (ended, pending)
