"""GET /v1/models: the catalog's models with offerings, in OpenAI's list shape, with their
prices and capabilities."""

from __future__ import annotations

import calendar
from datetime import date

import httpx

from gateway.models import Offering
from tests.gateway.calls import (
    settle,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World, model


def listed(world: World, path: str = "/v1/models") -> dict[str, object]:
    response = httpx.get(world.url + path, headers={"authorization": f"Bearer {world.key}"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, object] = response.json()
    return body


def test_it_lists_the_models_with_offerings_in_openai_shape(world: World) -> None:
    body = listed(world)
    assert body["object"] == "list"
    assert isinstance(body["data"], list)
    assert [m["id"] for m in body["data"]] == [
        "deepseek/deepseek-r1",
        "mistral/mistral-small",
        "old/legacy",
        "openai/gpt-5",
        "openai/gpt-5-mini",
    ]


def test_a_model_carries_its_offerings_prices_and_capabilities(world: World) -> None:
    data = listed(world)["data"]
    assert isinstance(data, list)
    gpt5 = next(m for m in data if m["id"] == "openai/gpt-5")
    assert gpt5["object"] == "model"
    assert gpt5["owned_by"] == "openai"
    assert gpt5["created"] == calendar.timegm(date(2025, 8, 7).timetuple())
    assert gpt5["deprecated"] is False
    assert gpt5["tiers"] == ["high"]
    assert gpt5["auto"] is True
    assert (gpt5["kind"], gpt5["apis"]) == ("chat", ["chat", "messages", "responses"])
    assert [o["provider"] for o in gpt5["offerings"]] == ["openai", "azure@eu", "azure"]
    openai = gpt5["offerings"][0]
    assert openai["pricing"]["prompt"].rstrip("0").rstrip(".") == "1.25"
    assert openai["pricing"]["unit"] == "USD per million tokens"
    assert openai["capabilities"] == {
        "tools": True,
        "json_schema": True,
        "reasoning_efforts": ["minimal", "low", "medium", "high"],
        "input_modalities": ["file", "image"],
        "parameters": [],
    }
    assert (openai["quantization"], openai["collects_data"], openai["locations"]) == (
        None,
        True,
        [],
    )
    assert openai["stats"] is None


def test_a_model_without_offerings_is_not_listed(world: World) -> None:
    model("empty/none")
    Offering.objects.filter(model_id="old/legacy").update(enabled=False)
    Offering.objects.get(model_id="openai/gpt-5-mini").save()  # moves the catalog fingerprint
    settle()
    data = listed(world)["data"]
    assert isinstance(data, list)
    ids = [m["id"] for m in data]
    assert "empty/none" not in ids
    assert "old/legacy" not in ids


def test_it_answers_at_its_alias(world: World) -> None:
    assert listed(world, "/api/v1/models") == listed(world)
