"""With Redis unreachable, the gateway keeps serving on this process's own counters: calls are
admitted and refused against the ledger balance, and reservations are settled where they
were made."""

from __future__ import annotations

from decimal import Decimal

from billing.admission import select
from billing.models import Generation
from billing.recording import drain
from tests.billing.conftest import HI, World
from tests.conftest import make_key, make_org

CLOSED = "redis://127.0.0.1:9/0"


def test_a_call_is_served_and_recorded_while_redis_is_down(world: World, settings: object) -> None:
    settings.REDIS_URL = CLOSED  # type: ignore[attr-defined]
    select.store.cache_clear()
    world.fake.script("gpt-5", usage={"prompt_tokens": 1000, "completion_tokens": 100})

    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 100})

    assert response.status_code == 200, response.text
    assert drain()
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert generation.cost == Decimal("0.002250000")
    assert select.local_store().open_reservations(world.org.pk, 2**62) == {}


def test_credit_is_still_enforced_while_redis_is_down(world: World, settings: object) -> None:
    settings.REDIS_URL = CLOSED  # type: ignore[attr-defined]
    select.store.cache_clear()
    poor = make_org("poor", credits=Decimal("0.001"))
    key, _ = make_key(poor)

    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 10_000}, key=key)

    assert response.status_code == 402, response.text
    assert response.json()["error"]["code"] == "insufficient_credits"
