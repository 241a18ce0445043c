"""The operations routes on Momor's port: no key needed, no record made, no rate limit; the
metrics token; the metrics on a port of their own."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from billing.models import Generation
from billing.recording import drain
from gateway.ops import exposition
from tests.gateway.calls import settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.ops.scrape import scrape
from tests.stores import free_port

TOKEN = "metrics-token-0123456789"


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_operations_routes_need_no_key_and_leave_no_record(world: World, path: str) -> None:
    response = httpx.get(world.url + path, timeout=10)
    assert response.status_code == 200, response.text
    assert "x-momor-request-id" not in response.headers
    assert not any(name.startswith("x-ratelimit") for name in response.headers)
    drain()
    assert Generation.objects.count() == 0


def test_readyz_says_what_it_checked(world: World) -> None:
    response = httpx.get(world.url + "/readyz", timeout=10)
    assert response.json() == {
        "status": "ready",
        "checks": {"catalog": "ok", "database": "ok", "redis": "ok", "handoffs": "ok"},
    }


def test_metrics_behind_a_token_need_it(world: World, settings: Any) -> None:
    settings.MOMOR_METRICS_TOKEN = TOKEN
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": TOKEN}):
        response = httpx.get(world.url + "/metrics", headers=headers, timeout=10)
        assert response.status_code == 401, headers
        assert response.text == "A valid metrics token is required.\n"
        assert response.headers["www-authenticate"] == 'Bearer realm="metrics"'
    assert "momor_calls_total" in {name for name, _ in scrape(world.url, TOKEN)}


def test_metrics_off_leave_no_route(world: World, settings: Any) -> None:
    settings.MOMOR_METRICS = False
    assert httpx.get(world.url + "/metrics", timeout=10).status_code == 404


def test_metrics_on_a_port_of_their_own(world: World, settings: Any) -> None:
    port = free_port()
    settings.MOMOR_METRICS_PORT = port
    settings.MOMOR_METRICS_TOKEN = TOKEN
    exposition.serve_on_port(port, "127.0.0.1")
    own = f"http://127.0.0.1:{port}"

    assert httpx.get(world.url + "/metrics", timeout=10).status_code == 404
    assert httpx.get(own + "/metrics", timeout=10).status_code == 401
    assert httpx.get(own + "/other", timeout=10).status_code == 404
    found = scrape(own, TOKEN)
    assert ("momor_handoff_high_water", frozenset()) in found
