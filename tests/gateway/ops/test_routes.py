"""The operations routes on Momor's port: no key needed, no record made, no rate limit; the
metrics token; the metrics on a port of their own."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from billing.models import Generation
from billing.recording.hand_off import drain
from core.breaker import REDIS
from gateway.ops import exposition
from tests.gateway.calls import ask, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.ops.scrape import SCRAPE_TOKEN, sample, scrape
from tests.stores import free_port

TOKEN = "metrics-token-0123456789"


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
def test_operations_routes_need_no_key_and_leave_no_record(world: World, path: str) -> None:
    token = {"authorization": f"Bearer {SCRAPE_TOKEN}"} if path == "/metrics" else {}
    response = httpx.get(world.url + path, headers=token, timeout=10)
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


def test_readyz_in_embedded_mode_says_redis_is_not_used(world: World, settings: Any) -> None:
    settings.REDIS_URL = ""
    response = httpx.get(world.url + "/readyz", timeout=10)
    assert (response.status_code, response.json()) == (
        200,
        {
            "status": "ready",
            "checks": {"catalog": "ok", "database": "ok", "redis": "not used", "handoffs": "ok"},
        },
    )


def test_metrics_behind_a_token_need_it(world: World, settings: Any) -> None:
    settings.MOMOR_METRICS_TOKEN = TOKEN
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": TOKEN}):
        response = httpx.get(world.url + "/metrics", headers=headers, timeout=10)
        assert response.status_code == 401, headers
        assert response.text == "A valid metrics token is required.\n"
        assert response.headers["www-authenticate"] == 'Bearer realm="metrics"'
    assert sample("momor_handoff_high_water") in scrape(world.url, TOKEN)


def test_metrics_off_leave_no_route(world: World, settings: Any) -> None:
    settings.MOMOR_METRICS = False
    token = {"authorization": f"Bearer {SCRAPE_TOKEN}"}
    assert httpx.get(world.url + "/metrics", headers=token, timeout=10).status_code == 404


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


def test_a_scrape_reads_the_stores_figures(world: World) -> None:
    assert world.post(ask("openai/gpt-5")).status_code == 200
    drain()
    found = scrape(world.url)

    assert found[sample("momor_breaker_open", store="redis")] == 0.0
    assert found[sample("momor_records_stream_backlog")] == 0.0
    assert found[sample("momor_records_stream_lag_seconds")] == 0.0
    assert found[sample("momor_dead_letters")] == 0.0
    assert found[sample("momor_handoffs_outstanding")] == 0.0
    assert found[sample("momor_handoff_high_water")] == 2000.0
    assert 0.0 <= found[sample("momor_catalog_age_seconds")] < 60


def test_with_the_breaker_open_redis_figures_are_left_out(world: World) -> None:
    REDIS.failed()
    try:
        found = scrape(world.url)
    finally:
        REDIS.reset()
    assert found[sample("momor_breaker_open", store="redis")] == 1.0
    names = {name for name, _ in found}
    assert not names & {"momor_records_stream_backlog", "momor_celery_queue_length"}
