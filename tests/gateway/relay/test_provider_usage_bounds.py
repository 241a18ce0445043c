"""What a provider reports as usage is read within bounds before Momor bills it: negative
counts are 0, counts past the records' column (a 70-bit integer, infinity) are the ceiling,
words and nulls 0, on every adapter, plain and streamed. The call is served, its answer can be
encoded, its record is stored and its charge is between nothing and the bound; never a call
made free by the provider's numbers, nor one whose record is lost."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from billing.ledger.posting import ledger_sum
from billing.models import Generation, LedgerEntry
from billing.recording.hand_off import drain
from gateway.providers.anthropic.response import usage_of as anthropic_usage
from gateway.providers.contract import TOKEN_CEILING, Usage, token_count
from gateway.providers.gemini.response import usage_of as gemini_usage
from tests.gateway.calls import HI, events, settle, settled_world  # noqa: F401 - autouse
from tests.gateway.conftest import World
from tests.gateway.request.test_tool_rules import ANTHROPIC, GEMINI, add_families

BAD = {
    "negative": -1_000_000,
    "huge": 2**70,
    "word": "many",
    "fraction": 12.5,
    "null": None,
}
# What each adapter's provider calls its input and output counts.
COUNTS = {
    "openai": ("gpt-5", "openai/gpt-5", "prompt_tokens", "completion_tokens"),
    "anthropic": (ANTHROPIC.first, ANTHROPIC.model, "input_tokens", "output_tokens"),
    "gemini": (GEMINI.first, GEMINI.model, "promptTokenCount", "candidatesTokenCount"),
}


@pytest.fixture(params=list(COUNTS))
def adapter(request: pytest.FixtureRequest, world: World) -> str:
    if request.param != "openai":
        add_families(world)
        settle()
    return str(request.param)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("bad", list(BAD))
def test_a_providers_unreadable_usage_is_billed_within_bounds(
    world: World, adapter: str, bad: str, stream: bool
) -> None:
    upstream_id, model, prompt, completion = COUNTS[adapter]
    world.fake.script(upstream_id, usage={prompt: BAD[bad], completion: BAD[bad]})
    body = {"model": model, "messages": HI, "max_tokens": 64}
    if stream:
        body["stream_options"] = {"include_usage": True}
        response = world.stream(body)
        assert response.status_code == 200, response.text
        chunks = events(response.text)
        assert chunks[-1] == "[DONE]", chunks[-3:]
        usage = chunks[-2]["usage"]
    else:
        response = world.post(body)
        assert response.status_code == 200, response.text
        usage = response.json()["usage"]

    assert usage["cost"] >= 0
    assert 0 <= usage["prompt_tokens"] <= TOKEN_CEILING
    assert drain(timeout=30)
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert Decimal(0) <= generation.cost
    assert 0 <= generation.prompt_tokens <= TOKEN_CEILING
    charges = LedgerEntry.objects.filter(generation=generation, kind="charge")
    assert [-c.amount for c in charges] == ([generation.cost] if generation.cost else [])
    world.org.refresh_from_db()
    assert world.org.balance == ledger_sum(world.org.pk)


def test_a_count_past_the_ceiling_is_billed_at_it(world: World) -> None:
    world.fake.script("gpt-5", usage={"prompt_tokens": 2**70, "completion_tokens": 1})
    response = world.post({"model": "openai/gpt-5", "messages": HI, "max_tokens": 64})
    assert response.status_code == 200, response.text
    assert drain(timeout=30)
    generation = Generation.objects.get(request_id=response.headers["x-momor-request-id"])
    assert generation.prompt_tokens == TOKEN_CEILING
    assert generation.cost > 0


ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@given(st.dictionaries(st.sampled_from(_names := [
    "prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details",
    "completion_tokens_details", "input_tokens", "output_tokens", "cache_read_input_tokens",
    "cache_creation_input_tokens", "output_tokens_details", "promptTokenCount",
    "candidatesTokenCount", "thoughtsTokenCount", "cachedContentTokenCount",
    "toolUsePromptTokenCount",
]), ANY, max_size=len(_names)))  # fmt: skip
def test_every_adapter_reads_any_usage_block_into_counts_within_bounds(raw: dict[str, Any]) -> None:
    for usage in (Usage.from_openai(raw), anthropic_usage(raw), gemini_usage(raw)):
        assert usage is not None
        for count in (
            usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
            usage.cache_write_tokens, usage.reasoning_tokens,
        ):  # fmt: skip
            assert isinstance(count, int)
            assert 0 <= count <= TOKEN_CEILING


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (5, 5), (-5, 0), (2**70, TOKEN_CEILING), (float("inf"), TOKEN_CEILING),
        (float("nan"), 0), (12.2, 13), ("42", 42), (" 7 ", 7), ("-3", 0), ("1e9", 0),
        (True, 0), (None, 0), ([3], 0),
    ],
)  # fmt: skip
def test_a_count_is_read_as_momor_bills_it(value: object, count: int) -> None:
    assert token_count(value) == count
