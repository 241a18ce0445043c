"""A thought signature Gemini puts on an answer's text comes back to the client as a
`reasoning.encrypted` entry of `reasoning_details` (plain and streamed), and goes back to Gemini
on that text when the client sends the assistant message back. Vertex shares the translation.
Calls go over real HTTP through Momor to the fake upstream."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.gateway.calls import settle
from tests.gateway.conftest import World, model, offer, provider, service_account

FLASH = "gemini-2.5-flash"
ASK = [{"role": "user", "content": "What is the capital of France?"}]
ANSWER = "Hello from the fake upstream."
SIGNED = {
    "type": "reasoning.encrypted",
    "data": {"google.thought_signature": "ZmFrZS1zaWduYXR1cmU6dGV4dA=="},  # signature("text")
}


@pytest.fixture(params=["gemini", "vertex"])
def google(request: pytest.FixtureRequest, world: World) -> World:
    """Gemini 2.5 Flash on the Gemini API, or on Vertex AI, its text signed."""
    if request.param == "gemini":
        row = provider("gemini", "gemini", f"{world.fake.url}/v1beta")
    else:
        token_url = request.getfixturevalue("fake_token_endpoint")
        row = provider(
            "vertex", "vertex", f"{world.fake.url}/vertex/v1", key=service_account(token_url)
        )
    offer(model("google/gemini-2.5-flash"), row, FLASH, "0.30", "2.50")
    settle()
    world.fake.script(FLASH, text_signature=True)
    return world


def call(world: World, messages: list[dict[str, Any]], *, stream: bool = False) -> httpx.Response:
    response = world.post(
        {"model": "google/gemini-2.5-flash", "messages": messages, "stream": stream}
    )
    assert response.status_code == 200, response.text
    return response


def sent_turns(world: World) -> list[Any]:
    return [r["body"]["contents"] for r in world.fake.requests(FLASH)]


def streamed_message(response: httpx.Response) -> dict[str, Any]:
    """The assistant message a client builds from a stream's deltas."""
    message: dict[str, Any] = {"role": "assistant", "content": ""}
    for block in response.text.removesuffix("\n\n").split("\n\n"):
        data = block.removeprefix("data: ")
        if data == "[DONE]":
            break
        for choice in orjson.loads(data)["choices"]:
            delta = choice["delta"]
            message["content"] += delta.get("content") or ""
            if "reasoning_details" in delta:
                message.setdefault("reasoning_details", []).extend(delta["reasoning_details"])
    return message


def replayed(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [*ASK, message, {"role": "user", "content": "And of Italy?"}]


def test_a_signed_text_comes_back_in_reasoning_details_and_goes_back(google: World) -> None:
    message = call(google, ASK).json()["choices"][0]["message"]

    assert message == {"role": "assistant", "content": ANSWER, "reasoning_details": [SIGNED]}

    call(google, replayed(message))
    assert sent_turns(google)[1][1] == {
        "role": "model",
        "parts": [{"text": ANSWER, "thoughtSignature": SIGNED["data"]["google.thought_signature"]}],
    }


def test_a_streamed_signed_text_comes_back_and_goes_back(google: World) -> None:
    message = streamed_message(call(google, ASK, stream=True))

    assert message == {"role": "assistant", "content": ANSWER, "reasoning_details": [SIGNED]}

    call(google, replayed(message), stream=True)
    assert sent_turns(google)[1][1] == {
        "role": "model",
        "parts": [{"text": ANSWER, "thoughtSignature": SIGNED["data"]["google.thought_signature"]}],
    }


def test_a_signature_sent_back_without_text_goes_on_an_empty_text(google: World) -> None:
    message = {"role": "assistant", "content": "", "reasoning_details": [SIGNED]}

    call(google, replayed(message))

    assert sent_turns(google)[0][1] == {
        "role": "model",
        "parts": [{"text": "", "thoughtSignature": SIGNED["data"]["google.thought_signature"]}],
    }
