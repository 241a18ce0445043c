"""The provider filters and sorts of a call over real HTTP: only, allow_fallbacks,
require_parameters, data_collection, quantizations, regions, max_price and the measured sorts,
each recorded on the generation with why every offering left out was."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
from django.utils import timezone

from billing.models import Generation
from billing.recording.hand_off import drain
from gateway.models import Offering, Provider, Region
from tests.gateway.calls import (
    ask,
    error_of,
    order_of,
    settle,
    settled_world,  # noqa: F401 - autouse
    tried,
)
from tests.gateway.conftest import World

OPENAI, AZURE_EU, AZURE = "gpt-5", "gpt-5-azure-eu", "gpt-5-azure"


def figures_written(world: World, calls: int) -> None:
    """Wait until the figures of `calls` tries of openai/gpt-5's offerings show in /v1/models:
    each process adds its tries to Redis once a second."""
    deadline, seen = time.monotonic() + 15, 0
    while time.monotonic() < deadline:
        listed = httpx.get(
            world.url + "/v1/models", headers={"authorization": f"Bearer {world.key}"}
        )
        gpt5 = next(m for m in listed.json()["data"] if m["id"] == "openai/gpt-5")
        seen = sum(o["stats"]["calls"] for o in gpt5["offerings"] if o["stats"])
        if seen >= calls:
            return
        time.sleep(0.2)
    raise AssertionError(f"{seen} of {calls} tries measured")


def declare(upstream_id: str, **fields: Any) -> None:
    Offering.objects.filter(upstream_id=upstream_id).update(updated_at=timezone.now(), **fields)


def place(name: str, region: str | None = None, **fields: Any) -> None:
    fields["updated_at"] = timezone.now()
    if region is None:
        Provider.objects.filter(name=name).update(**fields)
    else:
        Region.objects.filter(provider__name=name, name=region).update(**fields)


def recorded(response: httpx.Response) -> Generation:
    assert drain()
    return Generation.objects.get(request_id=response.headers["x-momor-request-id"])


def test_only_keeps_the_named_providers(world: World) -> None:
    assert order_of(world, ask(provider={"only": ["azure"]})) == [AZURE]
    world.fake.reset()
    assert order_of(world, ask(provider={"only": ["azure@eu", "openai"]})) == [OPENAI, AZURE_EU]


def test_only_naming_an_unknown_provider_is_refused(world: World) -> None:
    error = error_of(world.post(ask(provider={"only": ["nowhere"]})), 400, "invalid_value")
    assert "provider.only" in error["message"]


def test_no_fallbacks_answers_with_the_first_candidates_failure(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503})
    response = world.post(ask(provider={"allow_fallbacks": False}))
    assert response.status_code == 503
    assert tried(world.fake) == [OPENAI]
    world.fake.reset()
    ordered = ask(provider={"allow_fallbacks": False, "order": ["azure"]})
    assert world.post(ordered).headers["x-momor-provider"] == "azure@eu"


def test_require_parameters_keeps_the_offerings_that_take_them(world: World) -> None:
    declare(OPENAI, parameters=["temperature"])
    settle()
    body = ask(top_k=5, temperature=0.2, provider={"require_parameters": True})
    error_of(world.post(body), 404, "model_not_found")
    body = ask(temperature=0.2, seed=1, provider={"require_parameters": True})
    assert order_of(world, body) == [AZURE_EU, AZURE]
    world.fake.reset()
    schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}
    body = ask(response_format=schema, provider={"require_parameters": True})
    assert order_of(world, body) == [AZURE]
    row = recorded(world.post(body))
    assert {"model": "openai/gpt-5", "provider": "azure@eu",
            "reason": "it does not take json_schema (provider.require_parameters)"} in (
        row.routing["excluded"]
    )  # fmt: skip
    assert row.routing["provider"] == {"require_parameters": True}


def test_data_collection_deny_keeps_providers_that_collect_nothing(world: World) -> None:
    place("azure", collects_data=False)
    place("azure", "eu", collects_data=True)
    settle()
    assert order_of(world, ask(provider={"data_collection": "deny"})) == [AZURE]
    world.fake.reset()
    assert order_of(world, ask(provider={"data_collection": "allow"})) == [OPENAI, AZURE_EU, AZURE]


def test_quantizations_keep_the_listed_ones_and_drop_the_undeclared(world: World) -> None:
    declare(OPENAI, quantization="fp8")
    declare(AZURE, quantization="int4")
    settle()
    assert order_of(world, ask(provider={"quantizations": ["FP8", "bf16"]})) == [OPENAI]


def test_regions_match_region_names_and_declared_locations(world: World) -> None:
    place("openai", locations=["US"])
    place("azure", "eu", locations=["EU", "DE"])
    settle()
    assert order_of(world, ask(provider={"regions": ["de"]})) == [AZURE_EU]
    world.fake.reset()
    assert order_of(world, ask(provider={"regions": ["us", "EU"]})) == [OPENAI, AZURE_EU]


def test_max_price_leaves_out_the_dearer_offerings(world: World) -> None:
    body = ask(provider={"max_price": {"prompt": 1.3, "completion": 10}})
    assert order_of(world, body) == [OPENAI, AZURE_EU]


def test_a_price_ceiling_that_leaves_nothing_says_so(world: World) -> None:
    response = world.post(ask(provider={"max_price": {"completion": 1}}))
    error = error_of(response, 404, "model_not_found")
    assert "price ceiling" in error["message"]
    row = recorded(response)
    assert [e["reason"] for e in row.routing["excluded"]] == ["priced above provider.max_price"] * 3


@pytest.mark.parametrize(
    "prefs",
    [
        {"allow_fallbacks": "no"},
        {"require_parameters": 1},
        {"data_collection": "never"},
        {"quantizations": "fp8"},
        {"quantizations": [""]},
        {"regions": ["eu west"]},
        {"max_price": {"prompt": -1}},
        {"max_price": {"completion": "1"}},
        {"max_price": 3},
        {"sort": "fastest"},
    ],
)
def test_an_unreadable_filter_is_refused_naming_it(world: World, prefs: dict[str, Any]) -> None:
    error = error_of(world.post(ask(provider=prefs)), 400, "invalid_value")
    assert f"provider.{next(iter(prefs))}" in error["message"]


def test_latency_sort_puts_the_quickest_first_and_the_unmeasured_after(world: World) -> None:
    world.fake.script(OPENAI, delay_first_byte=0.3)
    for only in (["openai"], ["azure"]):
        assert world.post(ask(provider={"only": only})).status_code == 200
    figures_written(world, 2)
    world.fake.reset()
    assert order_of(world, ask(provider={"sort": "latency"})) == [AZURE, OPENAI, AZURE_EU]


def test_quality_sort_puts_the_reliable_first(world: World) -> None:
    world.fake.script(OPENAI, fail={"status": 503}, fail_times=1)
    world.post(ask(provider={"only": ["openai"], "allow_fallbacks": False}))
    world.post(ask(provider={"only": ["azure@eu"]}))
    figures_written(world, 2)
    world.fake.reset()
    assert order_of(world, ask(provider={"sort": "quality"})) == [AZURE_EU, OPENAI, AZURE]


def test_throughput_sort_puts_the_fastest_first(world: World) -> None:
    world.fake.script(OPENAI, chunks=5, chunk_delay=0.05, usage={"completion_tokens": 10})
    world.fake.script(AZURE, chunks=5, usage={"completion_tokens": 10})
    for only in (["openai"], ["azure"]):
        assert world.stream(ask(provider={"only": only})).status_code == 200
    figures_written(world, 2)
    world.fake.reset()
    assert order_of(world, ask(provider={"sort": "throughput"})) == [AZURE, OPENAI, AZURE_EU]


def test_the_models_list_shows_each_offerings_figures(world: World) -> None:
    assert world.post(ask()).status_code == 200
    figures_written(world, 1)
    listed = httpx.get(world.url + "/v1/models", headers={"authorization": f"Bearer {world.key}"})
    gpt5 = next(m for m in listed.json()["data"] if m["id"] == "openai/gpt-5")
    stats = {o["provider"]: o["stats"] for o in gpt5["offerings"]}
    assert stats["azure"] is None
    assert stats["openai"]["calls"] == 1 and stats["openai"]["quality"] == 1.0
    assert stats["openai"]["latency_ms"] >= 0
