"""Attacker-style: what an outsider learns of the tenants' traffic without a key. `/metrics`
(organization ids, admissions, cost per model) answers only a scrape with its token, or when
the operator opens it on purpose; `/v1/models` shows each offering's measured figures (calls
among them) only to a caller with a key or a session."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.gateway.calls import ask, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World

pytestmark = [pytest.mark.security, pytest.mark.django_db(transaction=True)]

TOKEN = "metrics-token-0123456789"


def test_metrics_without_a_token_are_not_served_on_momors_port(world: World, settings: Any) -> None:
    settings.MOMOR_METRICS_TOKEN = None
    response = httpx.get(world.url + "/metrics", timeout=10)
    assert response.status_code == 404
    assert "momor_" not in response.text


def test_metrics_opened_on_purpose_or_behind_a_token_are_served(
    world: World, settings: Any
) -> None:
    settings.MOMOR_METRICS_TOKEN = None
    settings.MOMOR_METRICS_PUBLIC = True
    assert httpx.get(world.url + "/metrics", timeout=10).status_code == 200
    settings.MOMOR_METRICS_PUBLIC = False
    settings.MOMOR_METRICS_TOKEN = TOKEN
    assert httpx.get(world.url + "/metrics", timeout=10).status_code == 401
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert httpx.get(world.url + "/metrics", headers=auth, timeout=10).status_code == 200


def _offerings(world: World, headers: dict[str, str]) -> list[dict[str, Any]]:
    listed = httpx.get(world.url + "/v1/models", headers=headers, timeout=10)
    assert listed.status_code == 200, listed.text
    gpt5 = next(m for m in listed.json()["data"] if m["id"] == "openai/gpt-5")
    offerings: list[dict[str, Any]] = gpt5["offerings"]
    return offerings


def test_the_models_list_shows_no_traffic_without_a_key(world: World) -> None:
    assert world.post(ask()).status_code == 200
    auth = {"authorization": f"Bearer {world.key}"}
    deadline = time.monotonic() + 15
    while not any(o["stats"] for o in _offerings(world, auth)):
        assert time.monotonic() < deadline, "the call's figures never showed"
        time.sleep(0.2)

    for headers in ({}, {"authorization": "Bearer sk-momor-not-a-key"}):
        assert [o["stats"] for o in _offerings(world, headers)] == [None] * 3
