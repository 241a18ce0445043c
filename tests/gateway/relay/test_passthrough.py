"""A text chunk of the shape OpenAI writes passes as its bytes, with `id` and `model` written
over and `provider` added: byte for byte what decoding and encoding it would give. Any other
chunk is left to the translator."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.relay.passthrough import Passthrough

REQUEST_ID = "5f0c2a7e9b1d4c3a8e6f0a1b2c3d4e5f"


def chunk(content: Any = "Hello", **fields: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": content}, "logprobs": None, "finish_reason": None}
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion.chunk",
        "created": 1_790_000_000,
        "model": "gpt-5-2025-08-07",
        "system_fingerprint": "fp_1234",
        "choices": [choice],
        "usage": None,
        **fields,
    }


def translated(raw: dict[str, Any], *, keep_usage: bool) -> bytes:
    """What the translator's way sends the client for the same chunk."""
    out = {**raw, "id": REQUEST_ID, "model": "openai/gpt-5"}
    if not keep_usage:
        out.pop("usage", None)
    out["provider"] = "OpenAI"
    return b"data: " + orjson.dumps(out) + b"\n\n"


def relay(raw: dict[str, Any] | bytes, *, keep_usage: bool = False) -> tuple[bytes, int] | None:
    data = raw if isinstance(raw, bytes) else orjson.dumps(raw)
    return Passthrough(REQUEST_ID, "openai/gpt-5", "OpenAI", keep_usage=keep_usage).relay(data)


VARIANTS = {
    "openai": chunk(),
    "no fingerprint": {k: v for k, v in chunk().items() if k != "system_fingerprint"},
    "no usage field (vLLM)": {k: v for k, v in chunk().items() if k != "usage"},
    "fingerprint null": chunk(system_fingerprint=None),
    "empty text": chunk(""),
    "text of other scripts": chunk("héllo, 世界 🙂"),
}


@pytest.mark.parametrize("keep_usage", [False, True])
@pytest.mark.parametrize("name", VARIANTS)
def test_a_text_chunk_passes_as_the_translator_would_write_it(name: str, keep_usage: bool) -> None:
    raw = VARIANTS[name]
    passed = relay(raw, keep_usage=keep_usage)
    assert passed is not None
    assert passed[0] == translated(raw, keep_usage=keep_usage)
    assert passed[1] == len(raw["choices"][0]["delta"]["content"])


def test_the_role_chunk_passes_too() -> None:
    raw = chunk("")
    raw["choices"][0]["delta"] = {"role": "assistant", "content": ""}
    assert relay(raw) == (translated(raw, keep_usage=False), 0)


LEFT_TO_THE_TRANSLATOR = {
    "a finish reason": chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
    "usage": chunk(usage={"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}),
    "no choices (usage alone)": chunk(choices=[]),
    "text with an escape": chunk('line one\nsaid "hi"'),
    "a tool call": chunk(
        choices=[
            {
                "index": 0,
                "delta": {"tool_calls": [{"index": 0, "id": "call_1"}]},
                "finish_reason": None,
            }
        ]
    ),
    "reasoning": chunk(
        choices=[{"index": 0, "delta": {"reasoning_content": "hmm"}, "finish_reason": None}]
    ),
    "two choices": chunk(
        choices=[
            {"index": 0, "delta": {"content": "a"}, "finish_reason": None},
            {"index": 1, "delta": {"content": "b"}, "finish_reason": None},
        ]
    ),
    "an error": {"error": {"message": "overloaded"}},
    "no created": {k: v for k, v in chunk().items() if k != "created"},
    "created 0": chunk(created=0),
    "a provider field": chunk(provider="Someone"),
    "a refusal": chunk(choices=[{"index": 0, "delta": {"refusal": "no"}, "finish_reason": None}]),
}


@pytest.mark.parametrize("name", LEFT_TO_THE_TRANSLATOR)
def test_a_chunk_momor_reads_is_left_to_the_translator(name: str) -> None:
    assert relay(LEFT_TO_THE_TRANSLATOR[name]) is None


def test_a_chunk_written_another_way_is_left_to_the_translator() -> None:
    spaced = orjson.dumps(chunk()).replace(b'","', b'", "')
    reordered = orjson.dumps({"object": "chat.completion.chunk", **chunk()})
    assert relay(spaced) is None
    assert relay(reordered) is None


def test_text_that_is_not_utf8_is_left_to_the_translator() -> None:
    broken = orjson.dumps(chunk("caf\u00e9")).replace("é".encode(), b"\xe9")
    assert relay(broken) is None
