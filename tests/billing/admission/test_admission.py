"""Admission on the gateway: 402 when the organization's available credit or the key's own
credit limit cannot cover a call's worst cost, and per-key rate limits with their headers."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import httpx
import orjson
import pytest

from accounts.periods import Meter
from billing.ledger.admission_sync import load_spends
from billing.models import Generation
from billing.recording.hand_off import drain
from tests.billing.conftest import HI, World
from tests.conftest import make_key, make_org
from tests.rate_window import fresh_rate_window
from tests.server_fixture import forget_state

pytestmark = pytest.mark.django_db(transaction=True)

MINI = {"model": "openai/gpt-5-mini", "messages": HI, "max_tokens": 1000}


def post_raw(world: World, body: dict[str, Any], key: str) -> tuple[httpx.Response, int]:
    """POST the body as exact bytes, so the reservation (which counts them) is known."""
    raw = orjson.dumps(body)
    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    url = world.url + "/v1/chat/completions"
    return httpx.post(url, content=raw, headers=headers, timeout=30), len(raw)


def mini_reservation(size: int, max_tokens: int) -> Decimal:
    """gpt-5-mini's worst cost: a prompt token per two bytes of body, plus one, at $0.25 a
    million, and the completion ceiling at $2 a million."""
    micro = Decimal(size // 2 + 1) * Decimal("0.25") + Decimal(max_tokens) * 2
    return (micro / 1_000_000).quantize(Decimal("0.000000001"), rounding=ROUND_HALF_UP)


def test_an_organization_without_enough_credit_gets_402_insufficient_credits(
    world: World,
) -> None:
    poor = make_org("poor", credits=Decimal("0.001"))
    key, _ = make_key(poor, name="poor")

    response, size = post_raw(world, MINI, key)

    assert response.status_code == 402
    worst = mini_reservation(size, 1000)
    assert response.json() == {
        "error": {
            "message": f"Insufficient credits: this call may cost up to ${worst} and the "
            "organization's available credit does not cover it.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_credits",
        }
    }
    assert response.headers["x-momor-request-id"]
    assert world.fake.requests() == []  # refused before any provider was called
    assert drain()
    refused = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert (refused.status, refused.http_status, refused.cost) == ("refused", 402, Decimal(0))


def test_a_call_the_credit_covers_is_admitted_with_the_same_body(world: World) -> None:
    """The boundary: a balance of exactly the worst cost admits the call."""
    _, size = post_raw(world, MINI, world.key)  # measure the body once
    exact = make_org("exact", credits=mini_reservation(size, 1000))
    key, _ = make_key(exact, name="exact")

    response, _ = post_raw(world, MINI, key)

    assert response.status_code == 200, response.text


def test_a_key_past_its_own_credit_limit_gets_402_while_the_organization_still_has_credit(
    world: World,
) -> None:
    world.fake.script("gpt-5-mini", usage={"prompt_tokens": 10, "completion_tokens": 500})
    _, size = post_raw(world, MINI, world.key)
    key, _ = make_key(world.org, name="capped", credit_limit=mini_reservation(size, 1000))

    first, _ = post_raw(world, MINI, key)
    assert drain()
    second, _ = post_raw(world, MINI, key)

    assert first.status_code == 200, first.text
    assert second.status_code == 402
    assert second.json()["error"] == {
        "message": "This key has reached its credit limit.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_credits",
    }
    assert post_raw(world, MINI, world.key)[0].status_code == 200  # the org's other key
    assert drain()
    forget_state()  # a fresh store loads the key's spend from its records
    assert post_raw(world, MINI, key)[0].status_code == 402


def test_a_key_rate_limit_sends_its_headers_on_every_answer_and_429_when_spent(
    world: World,
) -> None:
    fresh_rate_window()
    key, _ = make_key(world.org, name="limited", rate_limit=3)

    served = world.post({"model": "openai/gpt-5-mini", "messages": HI}, key=key)
    unreadable = world.post({"model": "openai/gpt-5-mini", "messages": HI, "stream": 1}, key=key)
    unknown = world.post({"model": "nope/nothing", "messages": HI}, key=key)
    spent = world.post({"model": "openai/gpt-5-mini", "messages": HI}, key=key)

    answers = [served, unreadable, unknown, spent]
    assert [a.status_code for a in answers] == [200, 400, 404, 429]
    assert [a.headers["x-ratelimit-limit"] for a in answers] == ["3"] * 4
    assert [a.headers["x-ratelimit-remaining"] for a in answers] == ["2", "1", "0", "0"]
    resets = {int(a.headers["x-ratelimit-reset"]) for a in answers}
    assert len(resets) == 1 and next(iter(resets)) % 60 == 0
    wait = int(spent.headers["retry-after"])
    assert 1 <= wait <= 60
    assert spent.json()["error"] == {
        "message": f"Too many requests: this key may make 3 a minute. Retry after {wait} seconds.",
        "type": "rate_limit_error",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert len(world.fake.requests()) == 1


def test_the_operator_default_limits_keys_without_their_own(world: World, settings: Any) -> None:
    fresh_rate_window()
    settings.MOMOR_RATE_LIMIT_PER_MINUTE = 2
    own, _ = make_key(world.org, name="own-limit", rate_limit=5)
    body = {"model": "openai/gpt-5-mini", "messages": HI}

    defaulted = [world.post(body) for _ in range(3)]
    overridden = world.post(body, key=own)

    assert [a.status_code for a in defaulted] == [200, 200, 429]
    assert [a.headers["x-ratelimit-limit"] for a in defaulted] == ["2", "2", "2"]
    assert [a.headers["x-ratelimit-remaining"] for a in defaulted] == ["1", "0", "0"]
    assert overridden.status_code == 200
    assert overridden.headers["x-ratelimit-limit"] == "5"
    assert overridden.headers["x-ratelimit-remaining"] == "4"


def test_a_402_carries_the_rate_limit_headers_too(world: World) -> None:
    poor = make_org("poor", credits=Decimal("0.001"))
    key, _ = make_key(poor, name="poor", rate_limit=10)

    response, _ = post_raw(world, MINI, key)

    assert response.status_code == 402
    assert response.headers["x-ratelimit-limit"] == "10"
    assert response.headers["x-ratelimit-remaining"] == "9"


def test_a_burst_of_first_calls_loads_the_key_spend_once(world: World, monkeypatch: Any) -> None:
    """Calls on a key with a credit limit whose spend the store has not loaded yet wait for
    one load together: twelve at once on a slow database made twelve loads, queued on the
    gateway's two lookup threads (past the lookup's time-out, some answered 503)."""
    key, api_key = make_key(world.org, name="burst", credit_limit=Decimal("5"))
    loads: list[int] = []

    def slow_load(org_id: int, meters: list[Meter], into: Any = None) -> None:
        loads.extend(meter.scope_id for meter in meters)
        time.sleep(0.5)
        load_spends(org_id, meters, into)

    monkeypatch.setattr("gateway.relay.admit.load_spends", slow_load)
    with ThreadPoolExecutor(max_workers=12) as pool:
        answers = list(pool.map(lambda _: post_raw(world, MINI, key)[0], range(12)))

    assert [a.status_code for a in answers] == [200] * 12
    assert loads == [api_key.pk]
