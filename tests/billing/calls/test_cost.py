"""What a call costs, as the caller reads it (`usage.cost`) and as it is charged (the
generation and its ledger entry): prices, cache reads and writes, reasoning, saved keys and
the BYOK fee, failures before output, and streams broken after it."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

import httpx
import orjson
import pytest

from accounts.models import SavedKey
from billing.admission import store
from billing.ledger.posting import ledger_sum
from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain
from gateway.models import Offering
from tests.billing.conftest import HI, World, catalog_current

pytestmark = pytest.mark.django_db(transaction=True)

GPT5 = {"model": "openai/gpt-5", "messages": HI}
MINI = {"model": "openai/gpt-5-mini", "messages": HI}
WITH_USAGE = {"stream_options": {"include_usage": True}}


def recorded(response: httpx.Response) -> Generation:
    assert drain()
    return Generation.objects.get(request_id=response.headers["x-momor-request-id"])


def charged(world: World, generation: Generation) -> list[Decimal]:
    """The generation's ledger charges; and the organization's balance still adds up."""
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)
    return [e.amount for e in LedgerEntry.objects.filter(generation=generation)]


def events(response: httpx.Response) -> list[dict[str, Any]]:
    lines = response.text.split("\n\n")
    return [orjson.loads(line[6:]) for line in lines if line.startswith("data: {")]


def post_raw(world: World, body: dict[str, Any]) -> tuple[httpx.Response, int]:
    raw = orjson.dumps(body)
    headers = {"authorization": f"Bearer {world.key}", "content-type": "application/json"}
    return httpx.post(world.url + "/v1/chat/completions", content=raw, headers=headers), len(raw)


def save_own_key(world: World, provider: str, secret: str) -> None:
    saved = SavedKey(organization=world.org, provider=provider)
    saved.set_secret(secret)
    saved.save()


def test_usage_cost_in_a_plain_answer_is_what_the_generation_is_charged(world: World) -> None:
    world.fake.script("gpt-5", usage={"prompt_tokens": 1000, "completion_tokens": 100})

    response = world.post(GPT5)

    assert response.json()["usage"]["cost"] == 0.00225  # 1000 x 1.25 + 100 x 10 per million
    generation = recorded(response)
    assert generation.cost == Decimal("0.002250000")
    assert generation.prices == {
        "prompt": "1.250000",
        "completion": "10.000000",
        "cache_read": "0.000000",
        "cache_write": "0.000000",
    }
    assert charged(world, generation) == [Decimal("-0.002250000")]
    assert world.org.balance == Decimal("99.997750000")


def test_the_streamed_usage_chunk_carries_the_cost_when_usage_is_asked(world: World) -> None:
    world.fake.script(
        "gpt-5", text="a b c", usage={"prompt_tokens": 1000, "completion_tokens": 100}
    )

    asked = world.stream({**GPT5, **WITH_USAGE})
    not_asked = world.stream(GPT5)

    usage_chunks = [e for e in events(asked) if e.get("usage")]
    assert len(usage_chunks) == 1 and usage_chunks[0]["choices"] == []
    assert usage_chunks[0]["usage"]["cost"] == 0.00225
    assert asked.text.endswith("data: [DONE]\n\n")
    assert [e for e in events(not_asked) if "usage" in e] == []
    assert recorded(asked).cost == recorded(not_asked).cost == Decimal("0.002250000")


def test_cache_reads_and_writes_are_charged_at_their_own_prices(world: World) -> None:
    offering = Offering.objects.get(upstream_id="gpt-5")
    offering.cache_read_price, offering.cache_write_price = Decimal("0.125"), Decimal("1.5")
    offering.save()
    catalog_current()
    usage = {
        "prompt_tokens": 1000,
        "prompt_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 200},
        "completion_tokens": 100,
    }
    world.fake.script("gpt-5", usage=usage)

    response = world.post(GPT5)

    # 200 fresh x 1.25 + 600 read x 0.125 + 200 written x 1.5 + 100 x 10, per million
    assert response.json()["usage"]["cost"] == 0.001625
    generation = recorded(response)
    assert generation.cost == Decimal("0.001625000")
    assert (generation.cached_tokens, generation.cache_write_tokens) == (600, 200)
    assert generation.prices["cache_read"] == "0.125000"
    assert generation.prices["cache_write"] == "1.500000"


def test_reasoning_is_charged_inside_the_completion_not_on_top(world: World) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "completion_tokens_details": {"reasoning_tokens": 60},
    }
    world.fake.script("gpt-5", usage=usage)

    response = world.post(GPT5)

    assert response.json()["usage"]["cost"] == 0.00225
    generation = recorded(response)
    assert (generation.completion_tokens, generation.reasoning_tokens) == (100, 60)
    assert generation.cost == Decimal("0.002250000")


def test_a_call_on_the_organizations_own_key_costs_nothing(world: World) -> None:
    save_own_key(world, "openai", "sk-own-openai-key-0001")
    world.fake.script("gpt-5-mini", usage={"prompt_tokens": 1000, "completion_tokens": 100})

    response = world.post(MINI)

    assert response.status_code == 200, response.text
    assert response.json()["usage"]["cost"] == 0
    sent = world.fake.requests("gpt-5-mini")
    assert [r["headers"]["authorization"] for r in sent] == ["Bearer sk-own-openai-key-0001"]
    generation = recorded(response)
    assert generation.cost == Decimal(0)
    assert [a.key_source for a in generation.attempts.all()] == ["own"]
    assert charged(world, generation) == []
    assert world.org.balance == Decimal(100)


def test_the_operator_byok_fee_charges_a_share_of_the_list_price(
    world: World, settings: Any
) -> None:
    settings.MOMOR_BYOK_FEE = "0.05"
    save_own_key(world, "openai", "sk-own-openai-key-0001")
    world.fake.script("gpt-5-mini", usage={"prompt_tokens": 1000, "completion_tokens": 100})

    response = world.post(MINI)

    # 5 % of 1000 x 0.25 + 100 x 2 per million ($0.00045)
    assert response.json()["usage"]["cost"] == 0.0000225
    generation = recorded(response)
    assert generation.cost == Decimal("0.000022500")
    assert charged(world, generation) == [Decimal("-0.000022500")]


def test_a_call_failing_before_output_costs_nothing_and_releases_its_reservation(
    world: World,
) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 500})

    response = world.post(MINI)

    assert response.status_code == 500
    generation = recorded(response)
    assert (generation.status, generation.http_status, generation.cost) == (
        "failed",
        500,
        Decimal(0),
    )
    assert [(a.http_status, a.cost) for a in generation.attempts.all()] == [(500, Decimal(0))]
    assert charged(world, generation) == []
    assert world.org.balance == Decimal(100)
    assert store().open_reservations(world.org.pk, int(time.time() * 1000)) == {}
    assert store().unposted(world.org.pk) == {}


def test_a_stream_broken_after_output_without_usage_is_billed_by_the_estimate(
    world: World,
) -> None:
    world.fake.script("gpt-5-mini", text="one two three four five six", drop_after=3, no_usage=True)

    response, size = post_raw(world, {**MINI, "stream": True})

    chunks = events(response)
    assert chunks[-1]["error"]["code"] == 502
    assert "[DONE]" not in response.text
    delivered = "".join(
        c["choices"][0]["delta"].get("content") or "" for c in chunks if "error" not in c
    )
    assert delivered == "one two three"
    # about four characters a token: the body's bytes for the prompt, the text delivered
    prompt, completion = size // 4, (len(delivered) + 3) // 4
    expected = (Decimal(prompt) * Decimal("0.25") + completion * 2) / 1_000_000
    generation = recorded(response)
    assert (generation.prompt_tokens, generation.completion_tokens) == (prompt, completion)
    assert generation.usage_estimated is True
    assert (generation.status, generation.finish_reason) == ("failed", "error")
    assert generation.cost == expected.quantize(Decimal("0.000000001"))
    assert charged(world, generation) == [-generation.cost]


def test_a_stream_broken_after_output_is_billed_by_the_usage_the_provider_reported(
    world: World,
) -> None:
    reported = {"prompt_tokens": 40, "completion_tokens": 3, "total_tokens": 43}
    world.fake.script(
        "gpt-5-mini",
        text="one two three four five six",
        drop_after=3,
        no_usage=True,
        extra={"usage": reported},  # usage on every chunk, as some providers send it
    )

    response = world.stream(MINI)

    assert events(response)[-1]["error"]["code"] == 502
    generation = recorded(response)
    assert (generation.prompt_tokens, generation.completion_tokens) == (40, 3)
    assert generation.usage_estimated is False
    assert generation.cost == Decimal("0.000016000")  # 40 x 0.25 + 3 x 2 per million
    assert charged(world, generation) == [Decimal("-0.000016000")]
