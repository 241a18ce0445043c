from __future__ import annotations

from decimal import Decimal

import httpx

from billing.models import Generation, LedgerEntry
from billing.recording import drain
from tests.gateway.conftest import World

HI = [{"role": "user", "content": "hi"}]


def test_a_served_call_is_charged_once_and_looked_up(world: World) -> None:
    world.fake.script("gpt-5", text="Paris.", usage={"prompt_tokens": 1000, "completion_tokens": 100})
    response = world.post({"model": "openai/gpt-5", "messages": HI})
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["cost"] == 0.00225
    drain()
    rid = response.headers["x-momor-request-id"]
    generation = Generation.objects.get(request_id=rid)
    assert generation.cost == Decimal("0.002250000")
    charge = LedgerEntry.objects.get(generation=generation)
    assert charge.amount == Decimal("-0.002250000")
    world.org.refresh_from_db()
    assert world.org.balance == Decimal("99.997750000")
    lookup = httpx.get(f"{world.url}/v1/generation", params={"id": rid},
                       headers={"authorization": f"Bearer {world.key}"})
    assert lookup.status_code == 200, lookup.text
    assert lookup.json()["data"]["attempts"][0]["provider"] == "openai"


def test_it_refuses_a_call_the_credit_cannot_cover(world: World) -> None:
    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 20_000_000})
    assert response.status_code == 402, response.text
    assert response.json()["error"]["code"] == "insufficient_credits"
