"""What an answer carries beside the provider's own fields, over real HTTP against the fake
upstream: `provider` (the display name), each choice's `native_finish_reason` (plain answers),
and Momor's usage fields: `cost_details`, `prompt_tokens_details.cache_write_tokens`,
`token_count_basis` and `native_tokens`, with an estimated usage where the provider sent none."""

from __future__ import annotations

from typing import Any

import pytest

from billing.models import Generation
from gateway.models import Provider
from tests.gateway.calls import (
    ask,
    events,
    settle,
    settled_world,  # noqa: F401 - autouse
    wait_recorded,
)
from tests.gateway.conftest import World
from tests.gateway.providers.test_anthropic_e2e import SONNET, add_anthropic

CLAUDE = "anthropic/claude-sonnet-4-5"
# The fake OpenAI counts one prompt token for "hi" and one per word of its answer.
OPENAI_TOKENS = {"prompt_tokens": 1, "completion_tokens": 5}


@pytest.fixture
def claude(world: World) -> World:
    add_anthropic(world)
    settle()
    return world


def usage_chunk(chunks: list[Any]) -> dict[str, Any]:
    found = [c for c in chunks if isinstance(c, dict) and c.get("usage") and not c["choices"]]
    assert len(found) == 1, chunks
    usage: dict[str, Any] = found[0]["usage"]
    return usage


# provider


def test_a_plain_answer_names_its_provider(world: World) -> None:
    response = world.post(ask())
    assert response.status_code == 200, response.text
    assert response.json()["provider"] == "OpenAI"


def test_every_chunk_of_a_stream_names_its_provider(world: World) -> None:
    chunks = events(world.stream(ask(stream_options={"include_usage": True})).text)
    assert chunks[-1] == "[DONE]"
    assert {c["provider"] for c in chunks[:-1]} == {"OpenAI"}


def test_the_provider_is_the_catalogs_display_name(world: World) -> None:
    row = Provider.objects.get(name="openai")
    row.display_name = "OpenAI (direct)"
    row.save()
    settle()
    assert world.post(ask()).json()["provider"] == "OpenAI (direct)"
    chunks = events(world.stream(ask()).text)
    assert {c["provider"] for c in chunks[:-1]} == {"OpenAI (direct)"}


def test_a_translated_answer_names_its_provider(claude: World) -> None:
    assert claude.post(ask(CLAUDE, max_tokens=64)).json()["provider"] == "Anthropic"
    chunks = events(claude.stream(ask(CLAUDE, max_tokens=64)).text)
    assert {c["provider"] for c in chunks[:-1]} == {"Anthropic"}


# native_finish_reason


def test_a_chat_completions_answers_choices_come_back_as_the_provider_wrote_them(
    world: World,
) -> None:
    """Momor's reference: a Chat Completions provider's choices "come back as it wrote them"."""
    world.fake.script("gpt-5", finish_reason="length")
    choice = world.post(ask()).json()["choices"][0]
    assert choice["finish_reason"] == "length"
    assert "native_finish_reason" not in choice


@pytest.mark.parametrize(
    ("native", "finish"),
    [("end_turn", "stop"), ("max_tokens", "length"), ("refusal", "content_filter")],
)
def test_an_anthropic_answer_carries_its_own_stop_reason(
    claude: World, native: str, finish: str
) -> None:
    claude.fake.script(SONNET, finish_reason=native)
    choice = claude.post(ask(CLAUDE, max_tokens=64)).json()["choices"][0]
    assert (choice["finish_reason"], choice["native_finish_reason"]) == (finish, native)


def test_a_stream_carries_no_native_finish_reason(claude: World) -> None:
    """The peer reference that defines it gives it on plain answers only."""
    chunks = events(claude.stream(ask(CLAUDE, max_tokens=64)).text)
    choices = [ch for c in chunks[:-1] for ch in c["choices"]]
    assert [ch["finish_reason"] for ch in choices if ch.get("finish_reason")] == ["stop"]
    assert not any("native_finish_reason" in ch for ch in choices)


# usage


def test_a_plain_answers_usage_carries_the_upstream_cost_and_the_native_counts(
    world: World,
) -> None:
    usage = world.post(ask()).json()["usage"]
    prompt, completion = 1 * 1.25 / 1e6, 5 * 10 / 1e6
    assert usage == {
        **OPENAI_TOKENS,
        "total_tokens": 6,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
        "cost": pytest.approx(prompt + completion),
        "cost_details": {
            "upstream_inference_cost": pytest.approx(prompt + completion),
            "upstream_inference_prompt_cost": pytest.approx(prompt),
            "upstream_inference_completions_cost": pytest.approx(completion),
        },
        "token_count_basis": "provider_native",
        "native_tokens": {
            **OPENAI_TOKENS,
            "reasoning_tokens": 0,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
        },
    }


def test_a_streams_usage_chunk_carries_the_same_fields(world: World) -> None:
    chunks = events(world.stream(ask(stream_options={"include_usage": True})).text)
    usage = usage_chunk(chunks)
    assert usage["token_count_basis"] == "provider_native"
    assert usage["native_tokens"] == {
        **OPENAI_TOKENS,
        "reasoning_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert usage["cost_details"]["upstream_inference_cost"] == pytest.approx(5.125e-05)
    assert usage["prompt_tokens_details"]["cache_write_tokens"] == 0


def test_anthropic_cache_writes_and_reads_are_counted_and_priced_apart(claude: World) -> None:
    """Sonnet at 3 / 15 USD per million, no cache prices in the catalog: cache reads and
    writes fall back to the prompt price."""
    claude.fake.script(
        SONNET, usage={"cache_creation_input_tokens": 100, "cache_read_input_tokens": 40}
    )
    for usage in (
        claude.post(ask(CLAUDE, max_tokens=64)).json()["usage"],
        usage_chunk(
            events(
                claude.stream(
                    ask(CLAUDE, max_tokens=64, stream_options={"include_usage": True})
                ).text
            )
        ),
    ):
        prompt = usage["prompt_tokens"]
        assert usage["prompt_tokens_details"] == {"cached_tokens": 40, "cache_write_tokens": 100}
        assert usage["native_tokens"]["cache_write_tokens"] == 100
        assert usage["native_tokens"]["cache_read_tokens"] == 40
        assert usage["native_tokens"]["prompt_tokens"] == prompt
        details = usage["cost_details"]
        assert details["upstream_inference_prompt_cost"] == pytest.approx(prompt * 3 / 1e6)
        assert details["upstream_inference_completions_cost"] == pytest.approx(
            usage["completion_tokens"] * 15 / 1e6
        )


def test_on_a_saved_key_the_cost_is_the_fee_and_the_upstream_cost_the_list_price(
    world: World, settings: Any
) -> None:
    from tests.gateway.calls import save_key

    settings.MOMOR_BYOK_FEE = "0.05"
    save_key(world.org, "openai", "acme-openai-key")
    settle()
    usage = world.post(ask()).json()["usage"]
    upstream = 1 * 1.25 / 1e6 + 5 * 10 / 1e6
    assert usage["cost_details"]["upstream_inference_cost"] == pytest.approx(upstream)
    assert usage["cost"] == pytest.approx(upstream * 0.05, abs=1e-9)


def test_a_stream_without_provider_usage_still_owes_an_estimated_usage_chunk(
    world: World,
) -> None:
    world.fake.script("gpt-5", no_usage=True)
    response = world.stream(ask(stream_options={"include_usage": True}))
    chunks = events(response.text)
    usage = usage_chunk(chunks)
    assert chunks[-1] == "[DONE]"
    assert usage["token_count_basis"] == "gateway_estimate"
    assert "native_tokens" not in usage
    assert usage["completion_tokens"] == len("Hello from the fake upstream.") // 4 + 1
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    generation = Generation.objects.get(request_id=request_id)
    assert generation.usage_estimated
    assert (generation.prompt_tokens, generation.completion_tokens) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )
    assert float(generation.cost) == pytest.approx(usage["cost"])


def test_a_stream_without_provider_usage_sends_none_where_none_was_asked(world: World) -> None:
    world.fake.script("gpt-5", no_usage=True)
    chunks = events(world.stream(ask()).text)
    assert not any(isinstance(c, dict) and "usage" in c for c in chunks)


def test_a_plain_answer_without_provider_usage_is_estimated_and_billed_so(world: World) -> None:
    world.fake.script("gpt-5", no_usage=True)
    response = world.post(ask())
    usage = response.json()["usage"]
    assert usage["token_count_basis"] == "gateway_estimate"
    assert "native_tokens" not in usage
    assert usage["completion_tokens"] == len("Hello from the fake upstream.") // 4 + 1
    request_id = response.headers["x-momor-request-id"]
    wait_recorded(request_id)
    generation = Generation.objects.get(request_id=request_id)
    assert generation.usage_estimated
    assert generation.completion_tokens == usage["completion_tokens"]
    assert float(generation.cost) == pytest.approx(usage["cost"])
