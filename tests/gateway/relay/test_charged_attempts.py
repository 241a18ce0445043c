"""Every token a provider served on Momor's key is billed once: an answer Momor rejects (it
broke the call's tool rules, or cannot be read) is charged to the organization for the usage
the provider reported for it, or Momor's estimate where none can be read, and the call's charge
is the sum of its attempts'. No attempt is charged more than the call's reservation: past it,
the usage is kept as reported, the charge is the reservation and the record says so."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest
from django.test import Client
from django.urls import reverse

from billing.ledger.posting import ledger_sum
from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain
from gateway.models import Provider
from tests.gateway.calls import HI, save_key, settle, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World, model, offer
from tests.gateway.request.test_tool_rules import OPENAI, TIME, WEATHER, ask

MILLION = Decimal(1_000_000)


def usd(per_million: Decimal | int) -> Decimal:
    return (Decimal(per_million) / MILLION).quantize(Decimal("0.000000001"))


def call(world: World, body: dict[str, Any]) -> tuple[httpx.Response, int]:
    """The call sent as these exact bytes, and their size (what Momor estimates from)."""
    raw = orjson.dumps(body)
    headers = {"authorization": f"Bearer {world.key}", "content-type": "application/json"}
    response = httpx.post(
        world.url + "/v1/chat/completions", content=raw, headers=headers, timeout=30
    )
    return response, len(raw)


def charged(world: World, response: httpx.Response) -> Generation:
    """The call's generation, once its charge is in the ledger: the ledger charged what the
    record says, and the balance is the ledger's sum."""
    assert drain(timeout=30)
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    charges = LedgerEntry.objects.filter(generation=generation, kind="charge")
    assert [-c.amount for c in charges] == ([generation.cost] if generation.cost else [])
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)
    return generation


def attempt_costs(generation: Generation) -> list[tuple[str, Decimal]]:
    return [(a.upstream_id, a.cost) for a in generation.attempts.order_by("position")]


def test_an_answer_breaking_a_tool_rule_is_billed_with_the_one_served(world: World) -> None:
    world.fake.script(
        OPENAI.first,
        tool_calls=[WEATHER, TIME],
        usage={"prompt_tokens": 100, "completion_tokens": 40},
    )
    world.fake.script(
        OPENAI.second, tool_calls=[WEATHER], usage={"prompt_tokens": 100, "completion_tokens": 20}
    )
    response = world.post(ask(OPENAI, max_tool_calls=1))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == OPENAI.second_place

    generation = charged(world, response)
    rejected = usd(100 * Decimal("1.25") + 40 * 10)  # gpt-5 on openai
    served = usd(100 * Decimal("1.30") + 20 * 10)  # gpt-5 on azure@eu
    assert attempt_costs(generation) == [(OPENAI.first, rejected), (OPENAI.second, served)]
    assert generation.cost == rejected + served == Decimal("0.000855")
    assert not generation.charge_capped
    assert world.org.balance == Decimal(100) - generation.cost


def test_a_call_whose_every_answer_is_rejected_is_billed_for_them_all(world: World) -> None:
    prices = {
        "gpt-5": ("1.25", "10"),
        "gpt-5-azure-eu": ("1.30", "10"),
        "gpt-5-azure": ("1.50", "12"),
    }
    for upstream_id in prices:
        world.fake.script(
            upstream_id,
            tool_calls=[WEATHER, TIME],
            usage={"prompt_tokens": 10, "completion_tokens": 1000},
        )
    response = world.post(ask(OPENAI, max_tool_calls=1))
    assert response.status_code == 502, response.text

    generation = charged(world, response)
    expected = [(u, usd(10 * Decimal(p) + 1000 * Decimal(c))) for u, (p, c) in prices.items()]
    assert attempt_costs(generation) == expected
    assert generation.status == "failed"
    assert generation.cost == sum(cost for _, cost in expected) == Decimal("0.0320405")


def test_an_answer_that_cannot_be_read_is_billed_at_the_estimate(world: World) -> None:
    world.fake.script(OPENAI.first, raw_body="bm90IGFuIGFuc3dlcg==")  # b"not an answer"
    world.fake.script(OPENAI.second, usage={"prompt_tokens": 100, "completion_tokens": 20})
    response, size = call(world, {"model": OPENAI.model, "messages": HI})
    assert response.status_code == 200, response.text

    generation = charged(world, response)
    # about four characters a token: the prompt's JSON, and the 13 bytes answered
    estimated = usd(size // 4 * Decimal("1.25") + (13 + 3) // 4 * 10)
    served = usd(100 * Decimal("1.30") + 20 * 10)
    assert attempt_costs(generation) == [(OPENAI.first, estimated), (OPENAI.second, served)]
    assert generation.cost == estimated + served


def test_a_rejected_answer_on_the_organizations_own_key_costs_the_byok_fee(
    world: World, settings: Any
) -> None:
    settings.MOMOR_BYOK_FEE = "0.05"
    save_key(world.org, "openai", "sk-own-key-of-acme-0001")
    settle()
    world.fake.script(
        OPENAI.first,
        tool_calls=[WEATHER, TIME],
        usage={"prompt_tokens": 100, "completion_tokens": 40},
    )
    world.fake.script(
        OPENAI.second, tool_calls=[WEATHER], usage={"prompt_tokens": 100, "completion_tokens": 20}
    )
    response = world.post(ask(OPENAI, max_tool_calls=1))
    assert response.status_code == 200, response.text

    generation = charged(world, response)
    rejected = usd(100 * Decimal("1.25") + 40 * 10)
    fee = usd((100 * Decimal("1.25") + 40 * 10) * Decimal("0.05"))
    served = usd(100 * Decimal("1.30") + 20 * 10)
    tried = [
        (a.key_source, a.upstream_id, a.cost) for a in generation.attempts.order_by("position")
    ]
    # the own key first, then the same offering on Momor's key, which breaks the rule too
    assert tried == [
        ("own", OPENAI.first, fee),
        ("momor", OPENAI.first, rejected),
        ("momor", OPENAI.second, served),
    ]
    assert generation.cost == fee + rejected + served == Decimal("0.00088125")


@pytest.fixture
def capped_model(world: World) -> str:
    """A model whose prompt is free: a call's reservation is its output ceiling alone."""
    offer(model("acme/capped"), Provider.objects.get(name="openai"), "capped-1", "0", "10")
    settle()
    return "acme/capped"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_usage_past_the_reservation_is_charged_the_reservation_and_flagged(
    world: World, capped_model: str, stream: bool
) -> None:
    world.fake.script("capped-1", usage={"prompt_tokens": 10, "completion_tokens": 1_000_000})
    body: dict[str, Any] = {"model": capped_model, "messages": HI, "max_tokens": 64}
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    response = world.post(body)
    assert response.status_code == 200, response.text

    generation = charged(world, response)
    reservation = usd(64 * 10)
    assert generation.completion_tokens == 1_000_000  # as reported
    assert generation.cost == reservation == Decimal("0.00064")
    assert attempt_costs(generation) == [("capped-1", reservation)]
    assert generation.charge_capped
    found = httpx.get(
        f"{world.url}/v1/generation",
        params={"id": generation.request_id},
        headers={"authorization": f"Bearer {world.key}"},
    )
    assert found.status_code == 200, found.text
    data = found.json()["data"]
    assert (data["cost"], data["charge_capped"]) == ("0.000640000", True)
    assert data["attempts"][0]["cost"] == "0.000640000"


def test_usage_within_the_reservation_is_charged_as_reported(
    world: World, capped_model: str
) -> None:
    world.fake.script("capped-1", usage={"prompt_tokens": 10, "completion_tokens": 64})
    response = world.post({"model": capped_model, "messages": HI, "max_tokens": 64})
    assert response.status_code == 200, response.text

    generation = charged(world, response)
    assert generation.cost == usd(64 * 10)
    assert not generation.charge_capped


def test_a_stream_rejected_before_it_showed_anything_is_billed(world: World) -> None:
    world.fake.script(
        OPENAI.first,
        tool_calls=[WEATHER, TIME],
        usage={"prompt_tokens": 100, "completion_tokens": 40},
    )
    world.fake.script(
        OPENAI.second, tool_calls=[WEATHER], usage={"prompt_tokens": 100, "completion_tokens": 20}
    )
    response, size = call(world, {**ask(OPENAI, max_tool_calls=1), "stream": True})
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == OPENAI.second_place

    generation = charged(world, response)
    # The rule broke before the provider's usage came: Momor's estimate of the prompt, and
    # nothing shown yet; the served stream's usage is the provider's.
    estimated = usd(size // 4 * Decimal("1.25"))
    served = usd(100 * Decimal("1.30") + 20 * 10)
    assert attempt_costs(generation) == [(OPENAI.first, estimated), (OPENAI.second, served)]
    assert generation.cost == estimated + served


def test_the_admin_shows_a_capped_charge(
    world: World, capped_model: str, admin_client: Client
) -> None:
    world.fake.script("capped-1", usage={"prompt_tokens": 10, "completion_tokens": 1_000_000})
    response = world.post({"model": capped_model, "messages": HI, "max_tokens": 64})
    generation = charged(world, response)

    listed = admin_client.get(reverse("admin:billing_generation_changelist"))
    assert listed.status_code == 200
    assert "column-charge_capped" in listed.content.decode()
    page = admin_client.get(reverse("admin:billing_generation_change", args=[generation.pk]))
    assert page.status_code == 200
    assert "Charge capped" in page.content.decode()
