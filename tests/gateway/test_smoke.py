from __future__ import annotations

from tests.gateway.conftest import World


def test_it_answers_a_plain_call(world: World) -> None:
    response = world.post(
        {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["id"] == response.headers["x-momor-request-id"]
    assert body["model"] == "openai/gpt-5"
    assert body["choices"][0]["message"]["content"] == "Hello from the fake upstream."


def test_it_streams(world: World) -> None:
    response = world.stream(
        {"model": "openai/gpt-5", "messages": [{"role": "user", "content": "hi"}]}
    )
    assert response.status_code == 200, response.text
    assert response.text.endswith("data: [DONE]\n\n")
    assert response.headers["x-momor-provider"] == "openai"
