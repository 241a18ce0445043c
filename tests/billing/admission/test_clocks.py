"""Reservation expiries and rate windows run on Redis's clock: a gateway process whose own clock
is ten minutes off (libfaketime, a real process) neither expires the reservation of a call
another process is serving, nor counts its calls in a window of its own."""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from django.conf import settings

from billing.calls.cost import from_units
from tests.billing.admission.test_reservations import units
from tests.billing.conftest import HI, World
from tests.conftest import make_key, make_org
from tests.faked_clock import gateway_with_clock
from tests.redis_helpers import client as redis_client

TTL = 300
MAX_TOKENS = 100_000
BODY = {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": MAX_TOKENS}


def skewed_gateway(world: World, tmp_path: Path, seconds: int) -> AbstractContextManager[str]:
    """A gateway process whose wall clock runs `seconds` off the machine's."""
    return gateway_with_clock(
        world, tmp_path / "skewed.log",
        FAKETIME=f"{seconds:+d}s", MOMOR_RESERVATION_TTL_SECONDS=str(TTL),
    )  # fmt: skip


def post(url: str, key: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {key}"}
    return httpx.post(url + "/v1/chat/completions", json=BODY, headers=headers, timeout=60)


def reservation_units() -> int:
    """What BODY reserves on gpt-5-mini: two bytes a prompt token, its whole ceiling."""
    return units(len(orjson.dumps(BODY)) // 2 + 1, MAX_TOKENS, "0.25", "2")


@pytest.mark.parametrize("skew", [600, -600], ids=["ahead", "behind"])
def test_a_skewed_process_leaves_another_processs_reservation_held(
    world: World, tmp_path: Path, settings: Any, skew: int
) -> None:
    """Credit for one call: while one process serves it, the other refuses a second, whichever
    of the two runs ten minutes off."""
    settings.MOMOR_RESERVATION_TTL_SECONDS = TTL
    credit = from_units(reservation_units() * 3 // 2)
    org = make_org("clocks", credits=Decimal(credit))
    key, _ = make_key(org, name="clocks")
    world.fake.script("gpt-5-mini", delay_first_byte=8)
    with skewed_gateway(world, tmp_path, skew) as skewed:
        holder, other = (world.url, skewed) if skew > 0 else (skewed, world.url)
        served: list[httpx.Response] = []
        call = threading.Thread(target=lambda: served.append(post(holder, key)))
        call.start()
        try:
            wait_for_reservation(org.pk)
            refused = post(other, key)
        finally:
            call.join()
    assert refused.status_code == 402, refused.text
    assert refused.json()["error"]["code"] == "insufficient_credits"
    assert served[0].status_code == 200, served[0].text


def wait_for_reservation(org_id: int) -> None:
    from billing.admission import store

    deadline = time.monotonic() + 30
    while not store().open_reservations(org_id, 0):
        assert time.monotonic() < deadline, "the call never held a reservation"
        time.sleep(0.02)


def test_a_skewed_process_counts_its_calls_in_the_same_rate_window(
    world: World, tmp_path: Path
) -> None:
    org = make_org("windows", credits=Decimal(100))
    key, _ = make_key(org, name="windows", rate_limit=2)
    with skewed_gateway(world, tmp_path, 600) as skewed:
        window_with_time_left(seconds=20)
        assert post(world.url, key).status_code == 200
        assert post(world.url, key).status_code == 200
        refused = post(skewed, key)
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["code"] == "rate_limit_exceeded"
    assert 1 <= int(refused.headers["retry-after"]) <= 60


def window_with_time_left(seconds: int) -> None:
    """Until Redis's current minute has `seconds` left, so three calls fall in one window."""
    client = redis_client(settings.REDIS_URL)
    while True:
        now, _ = client.time()
        if 60 - now % 60 > seconds:
            return
        time.sleep(0.2)
