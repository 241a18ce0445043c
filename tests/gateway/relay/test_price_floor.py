"""A price below zero in the database (written before the catalog's rules, or behind the admin's
back) counts as zero: no call is answered with a negative cost, none is credited, and no
reservation below zero reaches admission, whose counters would then read it as a wedge."""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from billing.admission import store
from billing.admission.redis_store import RedisStore
from billing.admission.select import admission_store
from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain
from core.redis_keys import org_key
from gateway.models import Offering
from tests.gateway.calls import ask, settle, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.redis_helpers import client


def _negative_prices() -> None:
    """Every offering of openai/gpt-5, so that the worst case of a call on it is below zero."""
    Offering.objects.filter(model_id="openai/gpt-5").update(
        prompt_price=Decimal("-0.8"),
        completion_price=Decimal("-10"),
        cache_read_price=Decimal("-0.1"),
        cache_write_price=Decimal("-1"),
        updated_at=timezone.now(),
    )
    settle()


def _cost(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    usage: dict[str, Any] = response.json()["usage"]
    return usage


def _open(world: World) -> dict[str, int]:
    return store().open_reservations(world.org.pk, int(time.time() * 1000))


def test_a_call_on_a_negative_price_costs_nothing_and_credits_nothing(world: World) -> None:
    _negative_prices()
    response = world.post(ask())
    usage = _cost(response)
    assert usage["cost"] == 0
    assert usage["cost_details"] == {
        "upstream_inference_cost": 0,
        "upstream_inference_prompt_cost": 0,
        "upstream_inference_completions_cost": 0,
    }
    assert drain()
    row = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert row.cost == 0
    world.org.refresh_from_db()
    assert world.org.balance == Decimal(100)
    assert list(LedgerEntry.objects.values_list("kind", flat=True)) == ["topup"]


def _reserved_total(world: World) -> int:
    found = client(settings.REDIS_URL).get(org_key(world.org.pk, "adm", "restot"))
    return int(found or 0)


def test_a_negative_price_never_wedges_admission(
    world: World, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The reservation of a call on a negative price was negative: it raised the organization's
    available credit, the settle script could not read it back (`^(%d+):`), and once it expired
    every admission of the organization failed on it, so that Redis was given up for this
    process's own counters."""
    assert isinstance(admission_store(), RedisStore), "the test needs Redis admission"
    settings.MOMOR_RESERVATION_TTL_SECONDS = 1
    _negative_prices()
    for body in (ask(), ask(stream=True), ask(max_tokens=64)):
        response = world.post(body)
        assert response.status_code == 200, response.text
        assert _reserved_total(world) >= 0
    assert drain()
    assert (_open(world), _reserved_total(world)) == ({}, 0)
    time.sleep(1.2)  # any reservation left would now be expired by the next admission
    for _ in range(3):
        assert world.post(ask()).status_code == 200
    Offering.objects.filter(model_id="openai/gpt-5").update(
        prompt_price=Decimal("1.25"), completion_price=Decimal("10"), updated_at=timezone.now()
    )
    settle()
    charged = world.post(ask())
    cost = Decimal(str(_cost(charged)["cost"]))
    assert cost > 0
    assert drain()
    world.org.refresh_from_db()
    assert world.org.balance == Decimal(100) - cost
    assert (_open(world), _reserved_total(world)) == ({}, 0)
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
