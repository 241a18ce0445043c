"""The catalog the Messages route's tests call over HTTP: the `world` (OpenAI's gpt-5 and the
others) with Anthropic beside it, and the anthropic SDK pointed at the gateway."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import orjson
import pytest

from gateway.models import Provider
from tests.gateway.calls import settle
from tests.gateway.conftest import World, model, offer, provider

SONNET_ID = "anthropic/claude-sonnet-4-5"
SONNET = "claude-sonnet-4-5-20250929"
OMNI_ID = "acme/omni"
OMNI_ON_ANTHROPIC = "claude-omni-1"
OMNI_ON_OPENAI = "gpt-omni"
GPT5_ID = "openai/gpt-5"
PATH = "/v1/messages"
HI = [{"role": "user", "content": "hi"}]


def add_anthropic(world: World) -> None:
    """Claude Sonnet on Anthropic (with cache prices), and acme/omni on Anthropic (the cheaper,
    so tried first) and on OpenAI."""
    claude = provider("anthropic", "anthropic", f"{world.fake.url}/anthropic")
    sonnet = model(SONNET_ID)
    offer(
        sonnet, claude, SONNET, "3", "15",
        cache_read_price="0.30", cache_write_price="3.75", tools=True,
        reasoning_efforts=["low", "medium", "high"], input_modalities=["image", "file"],
    )  # fmt: skip
    omni = model(OMNI_ID)
    offer(omni, claude, OMNI_ON_ANTHROPIC, "1", "5", tools=True)
    offer(omni, Provider.objects.get(name="openai"), OMNI_ON_OPENAI, "2", "8", tools=True)
    settle()


@pytest.fixture(autouse=True)
def claude(world: World) -> None:
    """Every test of a module importing this calls a world with Anthropic in it."""
    add_anthropic(world)


def client(world: World, key: str | None = None) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=world.url, api_key=key or world.key, max_retries=0)


def post(world: World, body: Any, path: str = PATH, **headers: str) -> httpx.Response:
    """A Messages call as Anthropic's SDK sends it: the key in x-api-key."""
    sent = {"x-api-key": world.key, "anthropic-version": "2023-06-01", **headers}
    return httpx.post(world.url + path, json=body, headers=sent, timeout=30)


def direct(world: World, body: Any) -> httpx.Response:
    """The same call made to the fake Anthropic itself, not through Momor: what Anthropic
    writes for it (the fake answers alike but for the message's id)."""
    headers = {"x-api-key": "sk-direct", "anthropic-version": "2023-06-01"}
    return httpx.post(f"{world.fake.url}/anthropic/v1/messages", json=body, headers=headers)


def sse(text: str) -> list[tuple[str, Any]]:
    """Each event of a Messages stream: its name and its data, read as JSON."""
    found: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        if not block:
            continue
        lines = block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: "), block
        assert lines[1].startswith("data: "), block
        found.append((lines[0].removeprefix("event: "), orjson.loads(lines[1][6:])))
    return found


def error_of(response: httpx.Response, status: int, kind: str) -> str:
    """The message of a refusal in Anthropic's shape, after checking its status and type."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"type", "error"}, body
    assert body["type"] == "error"
    assert set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == kind, body
    message: str = body["error"]["message"]
    return message
