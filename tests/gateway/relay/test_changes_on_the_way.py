"""What Momor changes on the way, asserted on the exact body each provider received, and the
answer as the provider wrote it with id and model written over."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.models import Provider
from tests.gateway.calls import (
    HI,
    ask,
    events,
    save_key,
    sent,
    settle,
    settled_world,  # noqa: F401 - autouse
    streamed_text,
)
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World, model, offer

ON_AZURE_EU = {"order": ["azure@eu"]}
ON_AZURE = {"order": ["azure"], "ignore": ["azure@eu"]}


def body_sent(world: World, call: dict[str, Any], upstream_id: str) -> dict[str, Any]:
    response = world.post(call)
    assert response.status_code == 200, response.text
    received: dict[str, Any] = sent(world.fake, upstream_id)["body"]
    return received


def test_openai_gets_the_upstream_id_and_store_false_on_momor_key(world: World) -> None:
    call = ask(["openai/gpt-5"], models=["tier/high"], provider={"order": ["openai"]})
    assert body_sent(world, call, "gpt-5") == {"model": "gpt-5", "messages": HI, "store": False}


def test_openai_gets_store_false_whatever_was_sent_on_momor_key(world: World) -> None:
    assert body_sent(world, ask(store=True, metadata={"a": "b"}), "gpt-5") == {
        "model": "gpt-5",
        "messages": HI,
        "store": False,
        "metadata": {"a": "b"},
    }


@pytest.mark.parametrize("store", [True, False])
def test_openai_gets_store_as_written_on_a_saved_key(world: World, store: bool) -> None:
    save_key(world.org, "openai", "acme-openai-key")
    assert body_sent(world, ask(store=store), "gpt-5") == {
        "model": "gpt-5",
        "messages": HI,
        "store": store,
    }


def test_openai_gets_no_store_on_a_saved_key_when_none_was_sent(world: World) -> None:
    save_key(world.org, "openai", "acme-openai-key")
    assert body_sent(world, ask(), "gpt-5") == {"model": "gpt-5", "messages": HI}


def test_azure_gets_its_deployment_and_the_key_in_api_key(world: World) -> None:
    response = world.post(ask(store=True, provider=ON_AZURE_EU))
    assert response.status_code == 200
    request = sent(world.fake, "gpt-5-azure-eu")
    assert request["body"] == {"model": "gpt-5-azure-eu", "messages": HI, "store": True}
    assert request["headers"]["api-key"] == MOMOR_UPSTREAM_KEY
    assert "authorization" not in request["headers"]
    assert request["path"] == "/azure-eu/openai/v1/chat/completions"


def test_the_root_azure_offering_goes_to_the_root_address(world: World) -> None:
    assert world.post(ask(provider=ON_AZURE)).status_code == 200
    assert sent(world.fake, "gpt-5-azure")["path"] == "/azure/openai/v1/chat/completions"


@pytest.mark.parametrize(
    ("selector", "upstream_id", "path"),
    [
        ("openai/gpt-5", "gpt-5", "/v1/chat/completions"),
        ("mistral/mistral-small", "mistral-small-latest", "/mistral/v1/chat/completions"),
        (
            "deepseek/deepseek-r1",
            "deepseek-ai/DeepSeek-R1",
            "/deepinfra/v1/openai/chat/completions",
        ),
    ],
)
def test_other_providers_get_a_bearer_key(
    world: World, selector: str, upstream_id: str, path: str
) -> None:
    assert world.post(ask(selector)).status_code == 200
    request = sent(world.fake, upstream_id)
    assert request["headers"]["authorization"] == f"Bearer {MOMOR_UPSTREAM_KEY}"
    assert "api-key" not in request["headers"]
    assert request["path"] == path


def test_unknown_fields_and_parts_pass_unchanged(world: World) -> None:
    messages = [
        {"role": "system", "content": "be brief", "name": "sys", "cache_control": {"x": 1}},
        {"role": "user", "content": [{"type": "text", "text": "hi", "weird": [1, {"b": None}]}]},
    ]
    call = {
        "model": "mistral/mistral-small",
        "messages": messages,
        "temperature": 0.25,
        "top_p": 1,
        "n": 2,
        "stop": ["\n"],
        "logprobs": True,
        "top_logprobs": 3,
        "user": "u-1",
        "frobnicate": {"deep": [1, 2, {"x": "y"}]},
        "tool_choice": "auto",
        "parallel_tool_calls": False,
    }
    expected = {k: v for k, v in call.items() if k != "model"}
    assert body_sent(world, call, "mistral-small-latest") == {
        "model": "mistral-small-latest",
        **expected,
    }


def test_models_and_provider_are_taken_off(world: World) -> None:
    call = ask("deepseek/deepseek-r1", models=["openai/gpt-5"], provider={"sort": "price"})
    assert body_sent(world, call, "deepseek-ai/DeepSeek-R1") == {
        "model": "deepseek-ai/DeepSeek-R1",
        "messages": HI,
    }


# The output ceiling


@pytest.mark.parametrize(
    ("selector", "upstream_id", "field", "provider"),
    [
        ("openai/gpt-5", "gpt-5", "max_completion_tokens", None),
        ("openai/gpt-5", "gpt-5-azure-eu", "max_completion_tokens", ON_AZURE_EU),
        ("mistral/mistral-small", "mistral-small-latest", "max_tokens", None),
        ("deepseek/deepseek-r1", "deepseek-ai/DeepSeek-R1", "max_tokens", None),
    ],
)
@pytest.mark.parametrize(
    "ceiling",
    [
        {"max_tokens": 100},
        {"max_completion_tokens": 100},
        {"max_tokens": 5, "max_completion_tokens": 100},
    ],
)
def test_the_ceiling_goes_under_the_name_the_provider_reads(
    world: World,
    selector: str,
    upstream_id: str,
    field: str,
    provider: dict[str, Any] | None,
    ceiling: dict[str, int],
) -> None:
    call = ask(selector, **ceiling)
    if provider:
        call["provider"] = provider
    received = body_sent(world, call, upstream_id)
    received.pop("store", None)
    assert received == {"model": upstream_id, "messages": HI, field: 100}


def test_a_local_server_reads_max_tokens_and_reasoning_content(world: World) -> None:
    row = model("meta/llama-local")
    offer(row, Provider.objects.get(name="local"), "llama-local", "0", "0")
    save_key(world.org, "local", "acme-local-key")
    settle()
    messages = [*HI, {"role": "assistant", "content": "x", "reasoning": "thought"}, *HI]
    call = ask("meta/llama-local", messages=messages, max_completion_tokens=7)
    assert body_sent(world, call, "llama-local") == {
        "model": "llama-local",
        "messages": [
            *HI,
            {"role": "assistant", "content": "x", "reasoning_content": "thought"},
            *HI,
        ],
        "max_tokens": 7,
    }


# seed


def test_mistral_reads_seed_as_random_seed(world: World) -> None:
    call = ask("mistral/mistral-small", seed=42)
    assert body_sent(world, call, "mistral-small-latest") == {
        "model": "mistral-small-latest",
        "messages": HI,
        "random_seed": 42,
    }


@pytest.mark.parametrize(
    ("selector", "upstream_id"),
    [("openai/gpt-5", "gpt-5"), ("deepseek/deepseek-r1", "deepseek-ai/DeepSeek-R1")],
)
def test_others_read_seed_as_seed(world: World, selector: str, upstream_id: str) -> None:
    received = body_sent(world, ask(selector, seed=42), upstream_id)
    assert received["seed"] == 42
    assert "random_seed" not in received


# Streams ask for usage


def test_a_stream_asks_openai_for_usage(world: World) -> None:
    response = world.stream(ask())
    assert response.status_code == 200
    assert sent(world.fake, "gpt-5")["body"] == {
        "model": "gpt-5",
        "messages": HI,
        "stream": True,
        "stream_options": {"include_usage": True},
        "store": False,
    }


def test_a_stream_keeps_the_client_stream_options_and_forces_usage(world: World) -> None:
    call = ask(provider=ON_AZURE_EU, stream_options={"include_usage": False, "other": 1})
    response = world.stream(call)
    assert response.status_code == 200
    assert sent(world.fake, "gpt-5-azure-eu")["body"]["stream_options"] == {
        "include_usage": True,
        "other": 1,
    }


def test_a_stream_to_mistral_sends_no_stream_options(world: World) -> None:
    call = ask("mistral/mistral-small", stream_options={"include_usage": True})
    response = world.stream(call)
    assert response.status_code == 200
    assert sent(world.fake, "mistral-small-latest")["body"] == {
        "model": "mistral-small-latest",
        "messages": HI,
        "stream": True,
    }


def test_the_client_gets_no_usage_it_did_not_ask_for(world: World) -> None:
    chunks = events(world.stream(ask()).text)
    assert chunks[-1] == "[DONE]"
    assert all("usage" not in c for c in chunks[:-1])
    assert all(c["choices"] for c in chunks[:-1])


def test_the_client_gets_the_usage_chunk_it_asked_for(world: World) -> None:
    chunks = events(world.stream(ask(stream_options={"include_usage": True})).text)
    assert chunks[-1] == "[DONE]"
    usage_chunk = chunks[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["total_tokens"] == (
        usage_chunk["usage"]["prompt_tokens"] + usage_chunk["usage"]["completion_tokens"]
    )
    assert usage_chunk["id"] == chunks[0]["id"]
    assert [c for c in chunks[:-2] if c.get("usage")] == []


def test_a_plain_call_sends_no_stream_options(world: World) -> None:
    received = body_sent(world, ask(stream=False), "gpt-5")
    assert received == {"model": "gpt-5", "messages": HI, "stream": False, "store": False}


# reasoning_effort


@pytest.mark.parametrize(
    ("asked", "provider", "upstream_id", "expected"),
    [
        ("medium", None, "gpt-5", "medium"),
        ("minimal", None, "gpt-5", "minimal"),
        ("none", None, "gpt-5", "minimal"),
        ("xhigh", None, "gpt-5", "high"),
        ("minimal", ON_AZURE_EU, "gpt-5-azure-eu", "low"),
        ("none", ON_AZURE_EU, "gpt-5-azure-eu", "low"),
        ("high", ON_AZURE_EU, "gpt-5-azure-eu", "high"),
    ],
)
def test_reasoning_effort_goes_as_a_depth_the_offering_takes(
    world: World,
    asked: str,
    provider: dict[str, Any] | None,
    upstream_id: str,
    expected: str,
) -> None:
    call = ask(reasoning_effort=asked)
    if provider:
        call["provider"] = provider
    assert body_sent(world, call, upstream_id)["reasoning_effort"] == expected


@pytest.mark.parametrize(
    ("selector", "upstream_id", "provider"),
    [
        ("deepseek/deepseek-r1", "deepseek-ai/DeepSeek-R1", None),
        ("openai/gpt-5", "gpt-5-azure", ON_AZURE),
    ],
)
def test_reasoning_effort_is_taken_off_where_the_offering_takes_none(
    world: World, selector: str, upstream_id: str, provider: dict[str, Any] | None
) -> None:
    call = ask(selector, reasoning_effort="high")
    if provider:
        call["provider"] = provider
    assert "reasoning_effort" not in body_sent(world, call, upstream_id)


# Reasoning sent back


ASSISTANT_WITH_REASONING = {
    "role": "assistant",
    "content": "Paris.",
    "reasoning": "Recall the capitals.",
    "reasoning_details": [{"type": "reasoning.text", "text": "Recall the capitals."}],
}
ASSISTANT_WITHOUT = {"role": "assistant", "content": "Paris."}


def conversation(assistant: dict[str, Any]) -> list[dict[str, Any]]:
    return [*HI, assistant, {"role": "user", "content": "and Spain?"}]


def test_deepinfra_reads_reasoning_sent_back_as_reasoning_content(world: World) -> None:
    call = ask("deepseek/deepseek-r1", messages=conversation(ASSISTANT_WITH_REASONING))
    assert body_sent(world, call, "deepseek-ai/DeepSeek-R1")["messages"] == conversation(
        {**ASSISTANT_WITHOUT, "reasoning_content": "Recall the capitals."}
    )


def test_reasoning_details_alone_move_into_reasoning_content(world: World) -> None:
    assistant = {
        **ASSISTANT_WITHOUT,
        "reasoning_details": [
            {"type": "reasoning.text", "text": "one "},
            {"type": "reasoning.text", "text": "two"},
        ],
    }
    call = ask("deepseek/deepseek-r1", messages=conversation(assistant))
    assert body_sent(world, call, "deepseek-ai/DeepSeek-R1")["messages"] == conversation(
        {**ASSISTANT_WITHOUT, "reasoning_content": "one two"}
    )


@pytest.mark.parametrize(
    ("selector", "upstream_id", "provider"),
    [
        ("openai/gpt-5", "gpt-5", None),
        ("openai/gpt-5", "gpt-5-azure-eu", ON_AZURE_EU),
        ("mistral/mistral-small", "mistral-small-latest", None),
    ],
)
def test_reasoning_sent_back_is_taken_off_for_providers_that_read_none(
    world: World, selector: str, upstream_id: str, provider: dict[str, Any] | None
) -> None:
    call = ask(selector, messages=conversation(ASSISTANT_WITH_REASONING))
    if provider:
        call["provider"] = provider
    assert body_sent(world, call, upstream_id)["messages"] == conversation(ASSISTANT_WITHOUT)


# The answer


def test_reasoning_content_comes_back_as_reasoning(world: World) -> None:
    world.fake.script("deepseek-ai/DeepSeek-R1", reasoning="Let me think.", text="42")
    response = world.post(ask("deepseek/deepseek-r1"))
    message = response.json()["choices"][0]["message"]
    assert message["reasoning"] == "Let me think."
    assert message["content"] == "42"
    assert "reasoning_content" not in message


def test_streamed_reasoning_content_comes_back_as_reasoning(world: World) -> None:
    world.fake.script("deepseek-ai/DeepSeek-R1", reasoning="Let me think.", text="42")
    chunks = events(world.stream(ask("deepseek/deepseek-r1")).text)
    assert streamed_text(chunks, "reasoning") == "Let me think."
    assert streamed_text(chunks) == "42"
    assert not any(
        "reasoning_content" in choice["delta"]
        for chunk in chunks[:-1]
        for choice in chunk["choices"]
    )


def test_think_inside_content_stays_in_content(world: World) -> None:
    text = "<think>hmm</think>The answer."
    world.fake.script("deepseek-ai/DeepSeek-R1", text=text)
    response = world.post(ask("deepseek/deepseek-r1"))
    message = response.json()["choices"][0]["message"]
    assert message["content"] == text
    assert "reasoning" not in message
    chunks = events(world.stream(ask("deepseek/deepseek-r1")).text)
    assert streamed_text(chunks) == text


def test_the_answer_keeps_the_provider_fields_with_id_and_model_written_over(
    world: World,
) -> None:
    answer = {
        "id": "chatcmpl-upstream",
        "object": "chat.completion",
        "created": 1759400000,
        "model": "gpt-5-2025-08-07",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Paris.", "annotations": []},
                "logprobs": {"content": [{"token": "Paris", "logprob": -0.1, "top_logprobs": []}]},
                "finish_reason": "stop",
            },
            {
                "index": 1,
                "message": {"role": "assistant", "content": "Lyon?"},
                "logprobs": None,
                "finish_reason": "length",
            },
        ],
        "usage": {"prompt_tokens": 8, "completion_tokens": 2, "total_tokens": 10},
        "system_fingerprint": "fp_abc",
        "service_tier": "default",
        "x_vendor": {"trace": [1, 2]},
    }
    world.fake.script("gpt-5", response=answer)
    response = world.post(ask(n=2, logprobs=True))
    assert response.status_code == 200
    body = response.json()
    request_id = response.headers["x-momor-request-id"]
    assert body.pop("id") == request_id
    assert body.pop("model") == "openai/gpt-5"
    assert body.pop("provider") == "OpenAI"
    expected = {k: v for k, v in answer.items() if k not in ("id", "model")}
    assert body == expected or _only_usage_differs(body, expected)
    assert response.headers["x-momor-provider"] == "openai"
    assert response.headers["x-momor-model"] == "openai/gpt-5"


def _only_usage_differs(body: dict[str, Any], expected: dict[str, Any]) -> bool:
    """Billing may add its own keys to usage (such as cost); the provider's stay as written."""
    rest = {k: v for k, v in body.items() if k != "usage"}
    wanted = {k: v for k, v in expected.items() if k != "usage"}
    usage = body.get("usage") or {}
    return rest == wanted and all(usage.get(k) == v for k, v in expected["usage"].items())


def test_extra_fields_of_chunks_come_back(world: World) -> None:
    world.fake.script("gpt-5", extra={"service_tier": "flex"})
    chunks = events(world.stream(ask()).text)
    assert all(c["service_tier"] == "flex" for c in chunks[:-1])
    assert all(c["system_fingerprint"] == "fp_fake_upstream" for c in chunks[:-1])


def test_the_model_id_is_lowercase_publisher_name(world: World) -> None:
    response = world.post(ask("OpenAI/GPT-5"))
    assert response.json()["model"] == "openai/gpt-5"
    assert response.headers["x-momor-model"] == "openai/gpt-5"


def test_tool_calls_come_back_whole(world: World) -> None:
    world.fake.script("gpt-5", tool_calls=[{"id": "call_1", "name": "f", "arguments": '{"a": 1}'}])
    response = world.post(ask(tools=[{"type": "function", "function": {"name": "f"}}]))
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]
