"""JSON logs (MOMOR_LOG_FORMAT=json) of a gateway process run as the README says: one line per
call with its request id, organization, model, provider, status and latency; every other line
JSON too; no secret anywhere."""

from __future__ import annotations

import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest

from billing.models import Generation
from tests.conftest import make_key, make_org
from tests.fake_upstream_fixture import FakeUpstream
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, build_catalog
from tests.real_server import RealServer, start

# A loaded test machine can take seconds over a first database read.
PATIENT = {"MOMOR_DB_TIMEOUT_SECONDS": "30"}


def ready(server: RealServer, seconds: float = 60) -> None:
    """Until the server's readiness probe passes (its catalog loaded)."""
    deadline = time.monotonic() + seconds
    while httpx.get(server.url + "/readyz", timeout=30).status_code != 200:
        assert time.monotonic() < deadline, server.output()[-2000:]
        time.sleep(0.2)


@pytest.fixture
def json_gateway(transactional_db: None, fake: FakeUpstream) -> Iterator[RealServer]:
    build_catalog(fake.url)
    server = start("uvicorn", MOMOR_LOG_FORMAT="json", **PATIENT)
    ready(server)
    yield server
    server.stop()


def lines(server: RealServer) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in server.output().splitlines() if line.strip()]


def call(server: RealServer, key: str, **fields: Any) -> httpx.Response:
    body = {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "hi"}], **fields}
    headers = {"authorization": f"Bearer {key}"}
    return httpx.post(server.url + "/v1/chat/completions", json=body, headers=headers, timeout=30)


def test_each_call_is_one_json_line_with_its_figures(json_gateway: RealServer) -> None:
    org = make_org("acme", credits=Decimal(100))
    key, _ = make_key(org, name="test")
    served = call(json_gateway, key)
    refused = call(json_gateway, key, model="nobody/none")
    assert (served.status_code, refused.status_code) == (200, 404), refused.text
    served_id = served.headers["x-momor-request-id"]
    refused_id = refused.headers["x-momor-request-id"]
    from billing.recording.hand_off import drain

    drain()
    latency = Generation.objects.get(request_id=served_id).latency_ms

    found = lines(json_gateway)  # every line parses as JSON
    calls = [line for line in found if line["logger"] == "momor.calls"]
    assert [line["request_id"] for line in calls] == [served_id, refused_id]
    first = calls[0]
    assert {name: first[name] for name in (
        "level", "organization_id", "model", "provider", "status", "http_status", "latency_ms",
    )} == {
        "level": "INFO", "organization_id": org.id, "model": "openai/gpt-5",
        "provider": "openai", "status": "success", "http_status": 200, "latency_ms": latency,
    }  # fmt: skip
    assert (calls[1]["status"], calls[1]["http_status"]) == ("refused", 404)
    text = json_gateway.output()
    assert key not in text and key[:20] not in text and MOMOR_UPSTREAM_KEY not in text
