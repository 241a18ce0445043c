"""Reading /metrics as Prometheus does, and what changed between two scrapes."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

Sample = tuple[str, frozenset[tuple[str, str]]]

SCRAPE_TOKEN = "scrape-token-0123456789"
"""The metrics token the tests' gateways are given (tests/gateway/ops/conftest.py)."""


def scrape(url: str, token: str | None = SCRAPE_TOKEN) -> dict[Sample, float]:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(url + "/metrics", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def changes(
    before: dict[Sample, float], after: dict[Sample, float], *names: str
) -> dict[Sample, float]:
    """The samples of the named metrics that moved, by how much."""
    moved: dict[Sample, float] = {}
    for sample, value in after.items():
        if sample[0] in names and value != before.get(sample, 0.0):
            moved[sample] = value - before.get(sample, 0.0)
    return moved


def sample(name: str, **labels: str) -> Sample:
    return name, frozenset(labels.items())
