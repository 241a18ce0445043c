"""The official openai SDK as the client, unchanged but for its base URL and a Momor key: sync
and async, plain and streamed, its error classes, and the models list."""

from __future__ import annotations

import openai
import pytest
from openai.types.chat import ChatCompletionContentPartInputAudioParam

from tests.gateway.calls import (
    HI,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World


def client(world: World, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=world.url + "/v1", api_key=key or world.key, max_retries=0)


def async_client(world: World) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=world.url + "/v1", api_key=world.key, max_retries=0)


def test_the_sync_sdk_gets_an_answer(world: World) -> None:
    world.fake.script("gpt-5", text="Paris.", reasoning="Capitals.", reasoning_field="reasoning")
    raw = client(world).chat.completions.with_raw_response.create(
        model="openai/gpt-5", messages=HI, max_tokens=64
    )
    answer = raw.parse()
    assert answer.id == raw.headers["x-momor-request-id"]
    assert answer.model == "openai/gpt-5"
    assert answer.object == "chat.completion"
    assert answer.choices[0].message.content == "Paris."
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.model_extra["reasoning"] == "Capitals."
    assert answer.usage is not None and answer.usage.total_tokens > 0
    assert answer.system_fingerprint == "fp_fake_upstream"


def test_the_sync_sdk_streams(world: World) -> None:
    world.fake.script("gpt-5", text="one two three")
    chunks = list(
        client(world).chat.completions.create(
            model="openai/gpt-5",
            messages=HI,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert {c.model for c in chunks} == {"openai/gpt-5"}
    assert len({c.id for c in chunks}) == 1


def test_the_sdk_reads_what_momor_adds_to_an_answer(world: World) -> None:
    world.fake.script("gpt-5", fail={"status": 503})
    answer = client(world).chat.completions.create(
        model="openai/gpt-5",
        messages=HI,
        extra_headers={"X-Momor-Metadata": "enabled"},
    )
    extra = answer.model_extra or {}
    assert extra["provider"] == "Azure OpenAI"
    assert extra["momor_metadata"]["candidates"][1]["outcome"] == "served"
    assert "native_finish_reason" not in (answer.choices[0].model_extra or {})
    assert answer.usage is not None
    usage = answer.usage.model_extra or {}
    assert usage["token_count_basis"] == "provider_native"
    assert usage["cost_details"]["upstream_inference_cost"] == usage["cost"]
    assert answer.usage.prompt_tokens_details is not None
    assert answer.usage.prompt_tokens_details.cache_write_tokens == 0


def test_the_sdk_streams_what_momor_adds(world: World) -> None:
    chunks = list(
        client(world).chat.completions.create(
            model="openai/gpt-5",
            messages=HI,
            stream=True,
            stream_options={"include_usage": True},
            extra_headers={"X-Momor-Metadata": "enabled"},
        )
    )
    assert {(c.model_extra or {})["provider"] for c in chunks} == {"OpenAI"}
    assert chunks[-2].usage is not None and chunks[-2].choices == []
    assert chunks[-1].choices == []
    assert "momor_metadata" in (chunks[-1].model_extra or {})


def test_the_sdk_passes_extra_body_routing_fields(world: World) -> None:
    answer = client(world).chat.completions.create(
        model="tier/high",
        messages=HI,
        extra_body={"models": ["auto"], "provider": {"order": ["azure"]}},
    )
    assert answer.model == "deepseek/deepseek-r1"


async def test_the_async_sdk_gets_an_answer(world: World) -> None:
    async with async_client(world) as sdk:
        answer = await sdk.chat.completions.create(model="openai/gpt-5-mini", messages=HI)
    assert answer.model == "openai/gpt-5-mini"
    assert answer.choices[0].message.content == "Hello from the fake upstream."


async def test_the_async_sdk_streams(world: World) -> None:
    world.fake.script("gpt-5", text="a b c")
    async with async_client(world) as sdk:
        stream = await sdk.chat.completions.create(model="openai/gpt-5", messages=HI, stream=True)
        chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "a b c"
    assert chunks[-1].choices[0].finish_reason == "stop"


async def test_the_async_sdk_raises_on_a_refusal(world: World) -> None:
    async with async_client(world) as sdk:
        with pytest.raises(openai.NotFoundError) as caught:
            await sdk.chat.completions.create(model="nobody/here", messages=HI)
    assert caught.value.code == "model_not_found"


def test_a_bad_key_raises_authentication_error(world: World) -> None:
    with pytest.raises(openai.AuthenticationError) as caught:
        client(world, "sk-momor-wrong").chat.completions.create(model="openai/gpt-5", messages=HI)
    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"
    assert caught.value.type == "authentication_error"
    assert caught.value.param is None
    assert caught.value.request_id is None or isinstance(caught.value.request_id, str)
    assert len(caught.value.response.headers["x-momor-request-id"]) == 32


def test_an_unknown_model_raises_not_found(world: World) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client(world).chat.completions.create(model="claud-sonnet-5", messages=HI)
    assert caught.value.code == "model_not_found"
    assert caught.value.message.endswith("No configured model answers to claud-sonnet-5.")


def test_an_unreadable_routing_field_raises_bad_request(world: World) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client(world).chat.completions.create(
            model="openai/gpt-5", messages=HI, extra_body={"provider": {"zdr": "yes"}}
        )
    assert caught.value.code == "invalid_value"
    assert caught.value.body == {
        "message": "'provider.zdr' must be a boolean",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_value",
    }


def test_a_call_no_model_can_carry_raises_unprocessable_entity(world: World) -> None:
    audio: ChatCompletionContentPartInputAudioParam = {
        "type": "input_audio",
        "input_audio": {"data": "AAAA", "format": "wav"},
    }
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client(world).chat.completions.create(
            model="openai/gpt-5",
            messages=[{"role": "user", "content": [audio]}],
        )
    assert caught.value.code == "unsupported_parameter"


def test_a_limited_provider_raises_rate_limit(world: World) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 429})
    with pytest.raises(openai.RateLimitError) as caught:
        client(world).chat.completions.create(model="openai/gpt-5-mini", messages=HI)
    assert caught.value.status_code == 429


def test_every_provider_failing_raises_a_server_error(world: World) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 500, "body": "boom"})
    with pytest.raises(openai.InternalServerError) as caught:
        client(world).chat.completions.create(model="openai/gpt-5-mini", messages=HI)
    assert caught.value.status_code == 500


def test_no_provider_answering_raises_a_503_status_error(world: World) -> None:
    world.fake.script("gpt-5-mini", drop_after=0)
    with pytest.raises(openai.APIStatusError) as caught:
        client(world).chat.completions.create(model="openai/gpt-5-mini", messages=HI)
    assert caught.value.status_code == 503
    assert caught.value.code == "providers_unavailable"


def test_a_stream_refused_before_output_raises_as_an_http_error(world: World) -> None:
    world.fake.script("gpt-5-mini", fail={"status": 503})
    with pytest.raises(openai.InternalServerError) as caught:
        client(world).chat.completions.create(model="openai/gpt-5-mini", messages=HI, stream=True)
    assert caught.value.status_code == 503


def test_the_sdk_lists_the_models(world: World) -> None:
    listed = client(world).models.list()
    ids = [m.id for m in listed.data]
    assert ids == sorted(ids)
    assert {"openai/gpt-5", "openai/gpt-5-mini", "deepseek/deepseek-r1"} <= set(ids)
    gpt5 = next(m for m in listed.data if m.id == "openai/gpt-5")
    assert gpt5.object == "model"
    assert gpt5.owned_by == "openai"
