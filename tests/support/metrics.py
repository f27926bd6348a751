"""Prometheus scrapes over real HTTP, parsed with prometheus_client's own parser, and the values a test reads."""

import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

METRICS_TOKEN = "metrics-token-for-the-tests-0123456789"


def fetch(url: str, token: str | None = METRICS_TOKEN) -> tuple[int, str, dict]:
    """GET `url` with the bearer token (none when `token` is None): status, body and headers, errors included."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), dict(error.headers)


class Scrape:
    """One scrape: every sample by name and labels, and the families it exposed."""

    def __init__(self, text: str) -> None:
        self.families = {family.name: family for family in text_string_to_metric_families(text)}
        self.samples = {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in self.families.values()
            for sample in family.samples
        }

    def value(self, name: str, **labels: str) -> float:
        """A sample's value; 0 for one not exposed yet (a labelled series appears with its first observation)."""
        return self.samples.get((name, frozenset(labels.items())), 0.0)


def scrape(url: str, token: str = METRICS_TOKEN) -> Scrape:
    status, body, _ = fetch(url, token)
    assert status == 200, f"scrape of {url} answered {status}: {body[:500]}"
    return Scrape(body)
