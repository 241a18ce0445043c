"""prometheus-client's multiprocess mode: two gateway processes sharing PROMETHEUS_MULTIPROC_DIR,
and a scrape of either counts the calls of both."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from billing.recording.hand_off import drain
from tests.conftest import make_key, make_org
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import build_catalog
from tests.gateway.ops.scrape import SCRAPE_TOKEN, sample, scrape
from tests.gateway.ops.test_calllog import PATIENT, ready
from tests.real_server import RealServer, start

SERVED = sample(
    "momor_calls_total",
    api="chat",
    model="openai/gpt-5",
    provider="openai",
    key_source="momor",
    status="success",
    code="200",
)


@pytest.fixture
def two_gateways(
    transactional_db: None, fake: FakeUpstream, tmp_path: Path
) -> Iterator[tuple[RealServer, RealServer]]:
    build_catalog(fake.url)
    env = {
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "MOMOR_METRICS_TOKEN": SCRAPE_TOKEN,
        **PATIENT,
    }
    first = start("uvicorn", **env)
    second = start("uvicorn", **env)
    ready(first)
    ready(second)
    yield first, second
    first.stop()
    second.stop()
    drain()


def call(server: RealServer, key: str) -> None:
    body = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": f"Bearer {key}"}
    response = httpx.post(
        server.url + "/v1/chat/completions", json=body, headers=headers, timeout=30
    )
    assert response.status_code == 200, (response.text, server.output()[-3000:])


def test_either_process_answers_with_the_calls_of_both(
    two_gateways: tuple[RealServer, RealServer],
) -> None:
    first, second = two_gateways
    key, _ = make_key(make_org("acme", credits=Decimal(100)), name="test")
    for _ in range(2):
        call(first, key)
    for _ in range(3):
        call(second, key)

    assert scrape(first.url)[SERVED] == 5.0
    assert scrape(second.url)[SERVED] == 5.0
    duration = sample(
        "momor_call_duration_seconds_count", api="chat", model="openai/gpt-5", provider="openai"
    )
    assert scrape(first.url)[duration] == 5.0
