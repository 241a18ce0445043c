"""The Gemini API end to end: calls over real HTTP through Momor to the fake upstream, which
checks each body against google-genai's types and answers in Gemini's shapes."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from gateway.catalog.state import STATE
from testkit.fake_gemini import MID_STREAM, signature
from tests.gateway.calls import settle as refresh
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World, model, offer, provider

ASK = [{"role": "user", "content": "What is the capital of France?"}]
ASKED = [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}]
PRO = "gemini-3-pro-preview"
FLASH = "gemini-2.5-flash"
BACKUP = "gemini-2.5-flash-backup"
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture
def gemini(world: World) -> World:
    """Gemini 3 Pro on the Gemini API; Gemini 2.5 Flash there and, dearer, on a second
    Gemini API provider as its backup."""
    google = provider("gemini", "gemini", f"{world.fake.url}/v1beta")
    backup = provider("aistudio", "gemini", f"{world.fake.url}/aistudio/v1beta")
    pro = model("google/gemini-3-pro")
    offer(
        pro,
        google,
        PRO,
        "2",
        "12",
        tools=True,
        json_schema=True,
        reasoning_efforts=["low", "high"],
        input_modalities=["image", "audio", "file"],
    )
    flash = model("google/gemini-2.5-flash")
    offer(flash, google, FLASH, "0.30", "2.50", tools=True)
    offer(flash, backup, BACKUP, "0.40", "3", tools=True)
    settle("google/gemini-3-pro", "google/gemini-2.5-flash")
    return world


def settle(*model_ids: str) -> None:
    """Bring the running gateway's catalog up to the database now, and check it holds these
    models: its refresher starts with the first call, so before one nothing else would."""
    refresh()
    catalog = STATE.catalog
    assert catalog is not None and all(m in catalog.models for m in model_ids), model_ids


def ask(model_id: str = "google/gemini-3-pro", **fields: Any) -> dict[str, Any]:
    return {"model": model_id, "messages": ASK, **fields}


def sent(world: World, upstream_id: str) -> list[dict[str, Any]]:
    return [r["body"] for r in world.fake.requests(upstream_id)]


def events(response: httpx.Response) -> list[Any]:
    """The `data:` payloads of a whole SSE answer."""
    assert response.status_code == 200, response.text
    blocks = response.text.removesuffix("\n\n").split("\n\n")
    assert all(b.startswith("data: ") for b in blocks)
    return [b[6:] if b == "data: [DONE]" else orjson.loads(b[6:]) for b in blocks]


def chunk(
    first: dict[str, Any], index: int, delta: dict[str, Any], finish: str | None = None
) -> Any:
    return {
        "id": first["id"],
        "object": "chat.completion.chunk",
        "created": first["created"],
        "model": first["model"],
        "provider": "Google Gemini",
        "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }


def tokens(body: dict[str, Any]) -> dict[str, Any]:
    """A usage object without the fields Momor adds beside the provider's counts."""
    return {k: v for k, v in body["usage"].items() if k not in MOMOR_USAGE_FIELDS}


MOMOR_USAGE_FIELDS = ("cost", "cost_details", "token_count_basis", "native_tokens")


def usage(prompt: int, completion: int, reasoning: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def test_it_answers_a_plain_call_in_chat_completions_shape(gemini: World) -> None:
    response = gemini.post(ask())
    assert response.status_code == 200, response.text
    body = response.json()
    assert tokens(body) == usage(6, 5)
    assert body == {
        "id": response.headers["x-momor-request-id"],
        "object": "chat.completion",
        "created": body["created"],
        "model": "google/gemini-3-pro",
        "provider": "Google Gemini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello from the fake upstream."},
                "logprobs": None,
                "finish_reason": "stop",
                "native_finish_reason": "STOP",
            }
        ],
        "usage": body["usage"],
    }
    (call,) = gemini.fake.requests(PRO)
    assert call["path"] == f"/v1beta/models/{PRO}:generateContent"
    assert call["headers"]["x-goog-api-key"] == MOMOR_UPSTREAM_KEY
    assert call["body"] == {"contents": ASKED}


def test_the_outbound_body_carries_every_field_gemini_takes(gemini: World) -> None:
    response = gemini.post(
        {
            "model": "google/gemini-3-pro",
            "messages": [{"role": "system", "content": "Be brief."}, *ASK],
            "tools": [WEATHER_TOOL],
            "tool_choice": "auto",
            "response_format": {"type": "json_object"},
            "reasoning_effort": "medium",
            "max_completion_tokens": 300,
            "temperature": 0.5,
            "top_p": 0.8,
            "top_k": 20,
            "stop": "END",
            "seed": 11,
            "presence_penalty": 0.2,
            "frequency_penalty": 0.4,
            "metadata": {"team": "search"},
            "service_tier": "priority",
            "user": "u-1",
        }
    )
    assert response.status_code == 200, response.text
    assert sent(gemini, PRO) == [
        {
            "contents": ASKED,
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": "get_weather",
                            "description": "The weather in a city.",
                            "parametersJsonSchema": WEATHER_TOOL["function"]["parameters"],
                        }
                    ]
                }
            ],
            "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
            "generationConfig": {
                "temperature": 0.5,
                "topP": 0.8,
                "topK": 20,
                "seed": 11,
                "presencePenalty": 0.2,
                "frequencyPenalty": 0.4,
                "maxOutputTokens": 300,
                "stopSequences": ["END"],
                "responseMimeType": "application/json",
                "thinkingConfig": {"thinkingLevel": "HIGH", "includeThoughts": True},
            },
            "labels": {"team": "search"},
            "serviceTier": "priority",
        }
    ]


def test_it_streams_with_usage_and_done(gemini: World) -> None:
    response = gemini.stream(ask(stream_options={"include_usage": True}))
    assert response.headers["x-momor-provider"] == "gemini"
    got = events(response)
    first = got[0]
    assert first["id"] == response.headers["x-momor-request-id"]
    words = ["Hello", " from", " the", " fake", " upstream."]
    assert tokens(got[-2]) == usage(6, 5)
    assert got == [
        chunk(first, 0, {"role": "assistant", "content": ""}),
        *(chunk(first, 0, {"content": w}) for w in words),
        chunk(first, 0, {}, "stop"),
        {**chunk(first, 0, {}), "choices": [], "usage": got[-2]["usage"]},
        "[DONE]",
    ]
    (call,) = gemini.fake.requests(PRO)
    assert call["path"] == f"/v1beta/models/{PRO}:streamGenerateContent"
    assert call["body"] == {"contents": ASKED}


def test_a_stream_without_include_usage_has_no_usage_chunk(gemini: World) -> None:
    got = events(gemini.stream(ask()))
    assert got[-1] == "[DONE]"
    assert all(c == "[DONE]" or c["choices"] for c in got)


def test_a_tool_call_round_trip_replays_the_call_and_its_signature(gemini: World) -> None:
    gemini.fake.script(PRO, tool_calls=[{"name": "get_weather", "arguments": '{"city":"Paris"}'}])
    first = gemini.post(ask(tools=[WEATHER_TOOL]))
    assert first.status_code == 200, first.text
    (choice,) = first.json()["choices"]
    call_sig = signature("call:get_weather")
    assert choice == {
        "index": 0,
        "message": {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    "extra_content": {"google": {"thought_signature": call_sig}},
                }
            ],
        },
        "logprobs": None,
        "finish_reason": "tool_calls",
        "native_finish_reason": "STOP",
    }
    gemini.fake.script(PRO, text="Sunny, 21°C.")
    tool = {"role": "tool", "tool_call_id": "call_0", "content": '{"sky": "sunny", "temp": 21}'}
    messages = [*ASK, choice["message"], tool]
    second = gemini.post(
        {"model": "google/gemini-3-pro", "messages": messages, "tools": [WEATHER_TOOL]}
    )
    assert second.status_code == 200, second.text
    assert second.json()["choices"][0]["message"]["content"] == "Sunny, 21°C."
    assert sent(gemini, PRO)[1]["contents"] == [
        *ASKED,
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": call_sig,
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"sky": "sunny", "temp": 21},
                    }
                }
            ],
        },
    ]


def test_a_streamed_tool_call_is_one_indexed_delta(gemini: World) -> None:
    gemini.fake.script(PRO, tool_calls=[{"name": "get_weather", "arguments": '{"city":"Paris"}'}])
    got = events(gemini.stream(ask(tools=[WEATHER_TOOL])))
    first = got[0]
    call = {
        "index": 0,
        "id": "call_0",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        "extra_content": {"google": {"thought_signature": signature("call:get_weather")}},
    }
    assert got == [
        chunk(first, 0, {"role": "assistant", "content": ""}),
        chunk(first, 0, {"tool_calls": [call]}),
        chunk(first, 0, {}, "tool_calls"),
        "[DONE]",
    ]


def test_a_reasoning_round_trip_replays_the_signed_thought(gemini: World) -> None:
    gemini.fake.script(PRO, reasoning="Recall the capitals of Europe.", text="Paris.")
    first = gemini.post(ask(reasoning_effort="high"))
    assert first.status_code == 200, first.text
    message = first.json()["choices"][0]["message"]
    thought_sig = signature("thought")
    assert message == {
        "role": "assistant",
        "content": "Paris.",
        "reasoning": "Recall the capitals of Europe.",
        "reasoning_details": [
            {
                "type": "reasoning.text",
                "text": "Recall the capitals of Europe.",
                "data": {"google.thought_signature": thought_sig},
            }
        ],
    }
    assert tokens(first.json()) == usage(6, 6, 5)
    follow_up = {"role": "user", "content": "And of Italy?"}
    second = gemini.post(
        {
            "model": "google/gemini-3-pro",
            "messages": [*ASK, message, follow_up],
            "reasoning_effort": "high",
        }
    )
    assert second.status_code == 200, second.text
    assert sent(gemini, PRO)[1]["contents"] == [
        *ASKED,
        {
            "role": "model",
            "parts": [
                {
                    "text": "Recall the capitals of Europe.",
                    "thought": True,
                    "thoughtSignature": thought_sig,
                },
                {"text": "Paris."},
            ],
        },
        {"role": "user", "parts": [{"text": "And of Italy?"}]},
    ]


def test_streamed_reasoning_closes_with_one_reasoning_details_entry(gemini: World) -> None:
    gemini.fake.script(PRO, reasoning="Recall capitals.", text="Paris.")
    got = events(gemini.stream(ask(reasoning_effort="low")))
    first = got[0]
    detail = {
        "type": "reasoning.text",
        "text": "Recall capitals.",
        "data": {"google.thought_signature": signature("thought")},
    }
    assert got == [
        chunk(first, 0, {"role": "assistant", "content": ""}),
        chunk(first, 0, {"reasoning": "Recall"}),
        chunk(first, 0, {"reasoning": " capitals."}),
        chunk(first, 0, {"reasoning_details": [detail]}),
        chunk(first, 0, {"content": "Paris."}),
        chunk(first, 0, {}, "stop"),
        "[DONE]",
    ]


def test_n_2_gives_two_choices(gemini: World) -> None:
    response = gemini.post(ask(n=2))
    assert response.status_code == 200, response.text
    assert [(c["index"], c["message"]["content"]) for c in response.json()["choices"]] == [
        (0, "Hello from the fake upstream."),
        (1, "Hello from the fake upstream. (candidate 1)"),
    ]
    assert sent(gemini, PRO)[0]["generationConfig"] == {"candidateCount": 2}


def test_n_2_streams_two_choices(gemini: World) -> None:
    got = [c for c in events(gemini.stream(ask(n=2))) if c != "[DONE]"]
    by_index: dict[int, list[dict[str, Any]]] = {0: [], 1: []}
    for c in got:
        (choice,) = c["choices"]
        by_index[choice["index"]].append(choice)
    for index, text in (
        (0, "Hello from the fake upstream."),
        (1, "Hello from the fake upstream. (candidate 1)"),
    ):
        choices = by_index[index]
        assert choices[0]["delta"] == {"role": "assistant", "content": ""}
        assert "".join(c["delta"].get("content", "") for c in choices) == text
        assert [c["finish_reason"] for c in choices][-1] == "stop"
        assert all(c["finish_reason"] is None for c in choices[:-1])


def test_logprobs_come_back_in_openais_shape(gemini: World) -> None:
    gemini.fake.script(PRO, text="Paris.")
    response = gemini.post(ask(logprobs=True, top_logprobs=2))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["logprobs"] == {
        "content": [
            {
                "token": "Paris.",
                "logprob": -0.25,
                "bytes": list(b"Paris."),
                "top_logprobs": [
                    {"token": "Paris.", "logprob": -0.25, "bytes": list(b"Paris.")},
                    {"token": "alt1", "logprob": -3.0, "bytes": list(b"alt1")},
                ],
            }
        ]
    }
    assert sent(gemini, PRO)[0]["generationConfig"] == {"responseLogprobs": True, "logprobs": 2}


def test_input_audio_goes_as_inline_bytes(gemini: World) -> None:
    content = [
        {"type": "text", "text": "Transcribe this."},
        {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/map.png"}},
    ]
    response = gemini.post(
        {"model": "google/gemini-3-pro", "messages": [{"role": "user", "content": content}]}
    )
    assert response.status_code == 200, response.text
    assert sent(gemini, PRO)[0]["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Transcribe this."},
                {"inlineData": {"mimeType": "audio/wav", "data": "UklGRiQAAABXQVZF"}},
                {"fileData": {"fileUri": "https://example.com/map.png", "mimeType": "image/png"}},
            ],
        }
    ]


@pytest.mark.parametrize("status", [429, 503])
def test_a_rate_limit_or_overload_moves_to_the_next_candidate(gemini: World, status: int) -> None:
    gemini.fake.script(FLASH, fail={"status": status})
    response = gemini.post(ask("google/gemini-2.5-flash"))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "aistudio"
    assert len(gemini.fake.requests(FLASH)) == 1
    assert len(gemini.fake.requests(BACKUP)) == 1


@pytest.mark.parametrize("status", [429, 503])
def test_a_stream_moves_on_too_before_output(gemini: World, status: int) -> None:
    gemini.fake.script(FLASH, fail={"status": status})
    response = gemini.stream(ask("google/gemini-2.5-flash"))
    assert response.headers["x-momor-provider"] == "aistudio"
    assert events(response)[-1] == "[DONE]"


def test_a_body_gemini_rejects_is_returned_as_openais_error(gemini: World) -> None:
    response = gemini.post(ask("google/gemini-2.5-flash", top_k="many"))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error == {
        "message": error["message"],
        "type": "invalid_request_error",
        "param": None,
        "code": "INVALID_ARGUMENT",
    }
    assert error["message"].startswith(
        "Invalid JSON payload received. Invalid value at 'generationConfig.topK'"
    )
    assert gemini.fake.requests(BACKUP) == []


def test_an_error_after_output_ends_the_stream_on_one_error_chunk(gemini: World) -> None:
    gemini.fake.script(PRO, stream_error_after=2)
    response = gemini.stream(ask())
    got = events(response)
    first = got[0]
    assert got == [
        chunk(first, 0, {"role": "assistant", "content": ""}),
        chunk(first, 0, {"content": "Hello"}),
        chunk(first, 0, {"content": " from"}),
        {
            "id": first["id"],
            "object": "chat.completion.chunk",
            "created": first["created"],
            "model": "google/gemini-3-pro",
            "provider": "Google Gemini",
            "error": {"code": 500, "message": MID_STREAM},
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
        },
    ]
