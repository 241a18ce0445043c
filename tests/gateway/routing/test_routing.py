"""The candidate list of a call: offerings cheapest first, provider.order and provider.ignore,
tools and json_schema first, input modalities, saved keys before Momor's, zero data
retention."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.models import Model, Provider
from tests.gateway.calls import (
    HI,
    ask,
    error_of,
    order_of,
    save_key,
    sent,
    settle,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import MOMOR_UPSTREAM_KEY, World, model, offer

OPENAI, AZURE_EU, AZURE = "gpt-5", "gpt-5-azure-eu", "gpt-5-azure"


def keyed_order(world: World, body: dict[str, Any]) -> list[tuple[str, str]]:
    """The candidate order as (upstream id, key sent) pairs."""
    order_of(world, body)
    return [
        (r["model"], r["headers"].get("api-key") or r["headers"]["authorization"])
        for r in world.fake.requests()
    ]


def bearer(secret: str) -> str:
    return f"Bearer {secret}"


def test_it_tries_a_model_offerings_cheapest_first(world: World) -> None:
    assert order_of(world, ask()) == [OPENAI, AZURE_EU, AZURE]


def test_the_cheapest_offering_serves(world: World) -> None:
    response = world.post(ask())
    assert response.status_code == 200
    assert response.headers["x-momor-provider"] == "openai"
    assert [r["model"] for r in world.fake.requests()] == [OPENAI]


# provider.order


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        (["azure"], [AZURE_EU, AZURE, OPENAI]),
        (["azure@eu"], [AZURE_EU, OPENAI, AZURE]),
        (["azure@eu", "openai"], [AZURE_EU, OPENAI, AZURE]),
        (["openai", "azure@eu"], [OPENAI, AZURE_EU, AZURE]),
        (["azure@eu", "openai", "azure"], [AZURE_EU, OPENAI, AZURE]),
        (["AZURE", "openai"], [AZURE_EU, AZURE, OPENAI]),
        (["mistral"], [OPENAI, AZURE_EU, AZURE]),
    ],
)
def test_provider_order_leads_ahead_of_price(
    world: World, order: list[str], expected: list[str]
) -> None:
    assert order_of(world, ask(provider={"order": order})) == expected


def test_a_listed_region_ranks_by_its_own_place_behind_its_root(world: World) -> None:
    body = ask(provider={"order": ["azure", "openai", "azure@eu"]})
    assert order_of(world, body) == [AZURE, OPENAI, AZURE_EU]


def test_provider_order_applies_within_each_model(world: World) -> None:
    body = ask(["openai/gpt-5-mini", "openai/gpt-5"], provider={"order": ["azure"]})
    assert order_of(world, body) == ["gpt-5-mini", AZURE_EU, AZURE, OPENAI]


def test_the_leading_provider_serves(world: World) -> None:
    response = world.post(ask(provider={"order": ["azure@eu"]}))
    assert response.status_code == 200
    assert response.headers["x-momor-provider"] == "azure@eu"
    assert response.headers["x-momor-model"] == "openai/gpt-5"


# provider.ignore


@pytest.mark.parametrize(
    ("ignore", "expected"),
    [
        (["azure"], [OPENAI, AZURE_EU]),
        (["azure@eu"], [OPENAI, AZURE]),
        (["azure", "azure@eu"], [OPENAI]),
        (["openai"], [AZURE_EU, AZURE]),
        (["mistral"], [OPENAI, AZURE_EU, AZURE]),
    ],
)
def test_provider_ignore_leaves_out_a_root_or_a_region_alone(
    world: World, ignore: list[str], expected: list[str]
) -> None:
    assert order_of(world, ask(provider={"ignore": ignore})) == expected


def test_ignore_wins_over_order(world: World) -> None:
    body = ask(provider={"order": ["azure@eu"], "ignore": ["azure@eu"]})
    assert order_of(world, body) == [OPENAI, AZURE]


def test_ignoring_every_offering_answers_404(world: World) -> None:
    body = ask(provider={"ignore": ["openai", "azure", "azure@eu"]})
    error_of(world.post(body), 404, "model_not_found")
    assert world.fake.requests() == []


def test_ignoring_one_model_providers_moves_to_the_next_model(world: World) -> None:
    body = ask(["mistral/mistral-small", "openai/gpt-5-mini"], provider={"ignore": ["mistral"]})
    assert order_of(world, body) == ["gpt-5-mini"]


# tools and json_schema


TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "x", "schema": {"type": "object"}, "strict": True},
}


def test_a_call_with_tools_tries_the_offerings_that_take_them_first(world: World) -> None:
    body = ask(["deepseek/deepseek-r1", "openai/gpt-5"], tools=TOOLS)
    assert order_of(world, body) == [OPENAI, AZURE_EU, AZURE, "deepseek-ai/DeepSeek-R1"]


def test_a_call_without_tools_keeps_the_selector_order(world: World) -> None:
    body = ask(["deepseek/deepseek-r1", "openai/gpt-5"], tools=[])
    assert order_of(world, body) == ["deepseek-ai/DeepSeek-R1", OPENAI, AZURE_EU, AZURE]


def test_a_json_schema_format_tries_the_offerings_that_take_one_first(world: World) -> None:
    assert order_of(world, ask(response_format=SCHEMA)) == [OPENAI, AZURE, AZURE_EU]


def test_a_json_object_format_changes_no_order(world: World) -> None:
    body = ask(response_format={"type": "json_object"})
    assert order_of(world, body) == [OPENAI, AZURE_EU, AZURE]


def test_tools_and_json_schema_together(world: World) -> None:
    body = ask(["deepseek/deepseek-r1", "openai/gpt-5"], tools=TOOLS, response_format=SCHEMA)
    assert order_of(world, body) == [OPENAI, AZURE, AZURE_EU, "deepseek-ai/DeepSeek-R1"]


def test_provider_order_yields_to_tools(world: World) -> None:
    body = ask(["mistral/mistral-small", "deepseek/deepseek-r1"], tools=TOOLS)
    body["provider"] = {"order": ["deepinfra"]}
    assert order_of(world, body) == ["mistral-small-latest", "deepseek-ai/DeepSeek-R1"]


# input modalities


def image_call(model_: Any = "openai/gpt-5") -> dict[str, Any]:
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    return {"model": model_, "messages": [{"role": "user", "content": [part]}]}


def test_an_image_goes_only_to_offerings_that_take_images(world: World) -> None:
    assert order_of(world, image_call()) == [OPENAI]


def test_a_file_goes_only_to_offerings_that_take_files(world: World) -> None:
    part = {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:,"}}
    body = ask(["openai/gpt-5-mini", "openai/gpt-5"])
    body["messages"] = [{"role": "user", "content": [{"type": "text", "text": "see"}, part]}]
    assert order_of(world, body) == [OPENAI]


def test_audio_that_no_offering_takes_answers_422(world: World) -> None:
    part = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    body = ask(messages=[{"role": "user", "content": [part]}])
    error = error_of(world.post(body), 422, "unsupported_parameter")
    assert error["type"] == "invalid_request_error"
    assert world.fake.requests() == []


def test_text_parts_need_no_modality(world: World) -> None:
    body = ask(
        "openai/gpt-5-mini",
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    )
    assert order_of(world, body) == ["gpt-5-mini"]


# keys


def test_a_saved_root_key_comes_before_momor_key_on_each_offering(world: World) -> None:
    save_key(world.org, "azure", "acme-azure-key")
    assert keyed_order(world, ask()) == [
        (OPENAI, bearer(MOMOR_UPSTREAM_KEY)),
        (AZURE_EU, "acme-azure-key"),
        (AZURE_EU, MOMOR_UPSTREAM_KEY),
        (AZURE, "acme-azure-key"),
        (AZURE, MOMOR_UPSTREAM_KEY),
    ]


def test_a_saved_region_key_serves_that_region_alone(world: World) -> None:
    save_key(world.org, "azure@eu", "acme-eu-key")
    assert keyed_order(world, ask()) == [
        (OPENAI, bearer(MOMOR_UPSTREAM_KEY)),
        (AZURE_EU, "acme-eu-key"),
        (AZURE_EU, MOMOR_UPSTREAM_KEY),
        (AZURE, MOMOR_UPSTREAM_KEY),
    ]


def test_a_saved_region_key_wins_over_the_root_key_there(world: World) -> None:
    save_key(world.org, "azure", "acme-azure-key")
    save_key(world.org, "azure@eu", "acme-eu-key")
    assert keyed_order(world, ask(provider={"ignore": ["openai"]})) == [
        (AZURE_EU, "acme-eu-key"),
        (AZURE_EU, MOMOR_UPSTREAM_KEY),
        (AZURE, "acme-azure-key"),
        (AZURE, MOMOR_UPSTREAM_KEY),
    ]


def test_a_saved_key_serves_when_it_answers(world: World) -> None:
    save_key(world.org, "openai", "acme-openai-key")
    response = world.post(ask())
    assert response.status_code == 200
    assert sent(world.fake, OPENAI)["headers"]["authorization"] == "Bearer acme-openai-key"


def test_another_organization_saved_key_is_never_used(world: World) -> None:
    from tests.conftest import make_org

    other = make_org("globex")
    save_key(other, "openai", "globex-openai-key")
    assert keyed_order(world, ask(provider={"order": ["openai"]}))[0] == (
        OPENAI,
        bearer(MOMOR_UPSTREAM_KEY),
    )


def local_model() -> None:
    row = model("meta/llama-local", tiers=["local"])
    offer(row, Provider.objects.get(name="local"), "llama-local", "0", "0")


def test_a_provider_without_momor_key_needs_a_saved_key(world: World) -> None:
    local_model()
    settle()
    error = error_of(world.post(ask("meta/llama-local")), 404, "model_not_found")
    assert error["message"].startswith("No model answering to meta/llama-local runs on your own")
    assert world.fake.requests() == []


def test_a_provider_without_momor_key_serves_on_a_saved_key(world: World) -> None:
    local_model()
    save_key(world.org, "local", "acme-local-key")
    settle()
    response = world.post(ask("meta/llama-local"))
    assert response.status_code == 200, response.text
    assert response.headers["x-momor-provider"] == "local"
    assert sent(world.fake, "llama-local")["headers"]["authorization"] == "Bearer acme-local-key"


# zero data retention


def test_zdr_keeps_only_momor_keys_its_agreements_cover(world: World) -> None:
    body = ask(provider={"zdr": True})
    assert keyed_order(world, body) == [(AZURE_EU, MOMOR_UPSTREAM_KEY), (AZURE, MOMOR_UPSTREAM_KEY)]


def test_zdr_keeps_saved_keys_marked_zdr(world: World) -> None:
    save_key(world.org, "openai", "acme-zdr-key", zdr=True)
    assert keyed_order(world, ask(provider={"zdr": True})) == [
        (OPENAI, bearer("acme-zdr-key")),
        (AZURE_EU, MOMOR_UPSTREAM_KEY),
        (AZURE, MOMOR_UPSTREAM_KEY),
    ]


def test_zdr_drops_saved_keys_not_marked_zdr(world: World) -> None:
    save_key(world.org, "openai", "acme-plain-key")
    save_key(world.org, "azure", "acme-azure-key")
    assert keyed_order(world, ask(provider={"zdr": True})) == [
        (AZURE_EU, MOMOR_UPSTREAM_KEY),
        (AZURE, MOMOR_UPSTREAM_KEY),
    ]


def test_zdr_false_is_the_default(world: World) -> None:
    body = ask(provider={"zdr": False})
    assert order_of(world, body) == [OPENAI, AZURE_EU, AZURE]


def test_the_organization_hold_applies_zdr_to_every_call(world: World) -> None:
    world.org.zdr_hold = True
    world.org.save()
    assert order_of(world, ask()) == [AZURE_EU, AZURE]


def test_zdr_false_does_not_lift_the_organization_hold(world: World) -> None:
    world.org.zdr_hold = True
    world.org.save()
    assert order_of(world, ask(provider={"zdr": False})) == [AZURE_EU, AZURE]


def test_zdr_with_no_usable_key_answers_404(world: World) -> None:
    body = ask("mistral/mistral-small", provider={"zdr": True})
    error = error_of(world.post(body), 404, "model_not_found")
    assert "zero data retention" in error["message"]
    assert world.fake.requests() == []


def test_zdr_serves_a_model_on_the_offerings_it_keeps(world: World) -> None:
    response = world.post(ask(provider={"zdr": True}))
    assert response.status_code == 200
    assert response.headers["x-momor-provider"] == "azure@eu"


def test_a_model_without_offerings_answers_404(world: World) -> None:
    Model.objects.create(id="empty/none", tiers=[])
    settle()
    error = error_of(world.post({"model": "empty/none", "messages": HI}), 404, "model_not_found")
    assert error["message"] == "No configured model answers to empty/none."
