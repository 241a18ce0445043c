"""Selectors: exact models, tiers, auto and *, in the order the call gives them; the deprecated
and maximum-age filters for group selectors, from the call or the organization's policy."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest

from gateway.models import Model, Provider
from tests.gateway.calls import (
    ask,
    error_of,
    order_of,
    settle,
    settled_world,  # noqa: F401 - autouse
)
from tests.gateway.conftest import World, model, offer

GPT5 = ["gpt-5", "gpt-5-azure-eu", "gpt-5-azure"]


def aged(name: str, days: int, *, tier: str = "aged", price: str = "1") -> Model:
    """A model released `days` ago, offered on OpenAI."""
    row = model(f"age/{name}", released=date.today() - timedelta(days=days), tiers=[tier])  # noqa: DTZ011 - release dates are calendar days, as the gateway reads them
    offer(row, Provider.objects.get(name="openai"), f"age-{name}", price, price)
    return row


def served_by(world: World, body: dict[str, Any]) -> str:
    settle()
    response = world.post(body)
    assert response.status_code == 200, response.text
    assert response.json()["model"] == response.headers["x-momor-model"]
    return str(response.json()["model"])


def test_it_serves_an_exact_model(world: World) -> None:
    assert served_by(world, ask("openai/gpt-5-mini")) == "openai/gpt-5-mini"


@pytest.mark.parametrize(
    "selector", ["OpenAI/GPT-5-mini", "OPENAI/GPT-5-MINI", " openai/gpt-5-mini "]
)
def test_it_reads_an_exact_model_whatever_its_case(world: World, selector: str) -> None:
    assert served_by(world, ask(selector)) == "openai/gpt-5-mini"


def test_a_tier_lists_its_models_cheapest_first(world: World) -> None:
    assert order_of(world, ask("tier/high")) == ["deepseek-ai/DeepSeek-R1", *GPT5]


def test_it_reads_a_tier_whatever_its_case(world: World) -> None:
    assert order_of(world, ask("TIER/High")) == ["deepseek-ai/DeepSeek-R1", *GPT5]


def test_auto_lists_the_auto_models_cheapest_first(world: World) -> None:
    assert order_of(world, ask("auto")) == ["gpt-5-mini", *GPT5]


def test_star_lists_every_current_model_cheapest_first(world: World) -> None:
    assert order_of(world, ask("*")) == [
        "mistral-small-latest",
        "gpt-5-mini",
        "deepseek-ai/DeepSeek-R1",
        *GPT5,
    ]


def test_a_group_puts_the_newest_first_among_equal_prices(world: World) -> None:
    aged("older", 400, tier="tie")
    aged("newer", 20, tier="tie")
    aged("middle", 100, tier="tie")
    assert order_of(world, ask("tier/tie")) == ["age-newer", "age-middle", "age-older"]


def test_a_group_prices_a_model_by_its_cheapest_offering(world: World) -> None:
    # gpt-5's cheapest offering (1.25 + 10) is under 12; its dearest (1.50 + 12) is over.
    aged("twelve", 10, tier="high", price="6")
    assert order_of(world, ask("tier/high"))[:4] == ["deepseek-ai/DeepSeek-R1", *GPT5]


def test_it_tries_model_then_models_in_order(world: World) -> None:
    body = ask(["openai/gpt-5-mini", "deepseek/deepseek-r1"], models=["mistral/mistral-small"])
    assert order_of(world, body) == [
        "gpt-5-mini",
        "deepseek-ai/DeepSeek-R1",
        "mistral-small-latest",
    ]


def test_it_takes_models_as_a_string(world: World) -> None:
    body = ask("openai/gpt-5-mini", models="mistral/mistral-small")
    assert order_of(world, body) == ["gpt-5-mini", "mistral-small-latest"]


def test_it_tries_a_model_named_twice_once(world: World) -> None:
    body = ask(["openai/gpt-5", "tier/high"], models=["openai/gpt-5"])
    assert order_of(world, body) == [*GPT5, "deepseek-ai/DeepSeek-R1"]


def test_an_exact_selector_keeps_its_place_before_a_group(world: World) -> None:
    body = ask(["openai/gpt-5", "tier/high"])
    assert order_of(world, body) == [*GPT5, "deepseek-ai/DeepSeek-R1"]


# Deprecated models


def test_a_group_leaves_deprecated_models_out(world: World) -> None:
    assert order_of(world, ask("tier/low")) == ["mistral-small-latest"]


def test_a_group_takes_deprecated_models_when_asked(world: World) -> None:
    body = ask("tier/low", provider={"deprecated": True})
    assert order_of(world, body) == ["legacy-1", "mistral-small-latest"]


def test_an_exact_deprecated_model_is_served(world: World) -> None:
    assert served_by(world, ask("old/legacy")) == "old/legacy"
    body = ask("old/legacy", provider={"deprecated": False})
    assert served_by(world, body) == "old/legacy"


def test_a_group_follows_the_organization_deprecated_default(world: World) -> None:
    world.org.allow_deprecated = True
    world.org.save()
    assert order_of(world, ask("tier/low")) == ["legacy-1", "mistral-small-latest"]


def test_the_call_overrides_the_organization_deprecated_default(world: World) -> None:
    world.org.allow_deprecated = True
    world.org.save()
    body = ask("tier/low", provider={"deprecated": False})
    assert order_of(world, body) == ["mistral-small-latest"]


def test_a_group_with_only_deprecated_models_answers_404(world: World) -> None:
    legacy = Model.objects.get(id="old/legacy")
    legacy.tiers = ["museum"]
    legacy.save()
    settle()
    error = error_of(world.post(ask("tier/museum")), 404, "model_not_found")
    assert error["message"] == "No configured model answers to tier/museum."


# Maximum age


@pytest.mark.parametrize(
    ("max_age", "expected"),
    [
        ("P6M", ["age-fresh", "age-edge"]),
        ("P180D", ["age-fresh", "age-edge"]),
        ("180.00:00:00", ["age-fresh", "age-edge"]),
        ("p6m", ["age-fresh", "age-edge"]),
        ("P1Y", ["age-fresh", "age-edge", "age-late", "age-year"]),
        ("P12M", ["age-fresh", "age-edge", "age-late"]),
        ("P30D", ["age-fresh"]),
        ("P1M", ["age-fresh"]),
        ("P2Y", ["age-fresh", "age-edge", "age-late", "age-year", "age-old"]),
    ],
)
def test_a_group_leaves_out_models_older_than_max_age(
    world: World, max_age: str, expected: list[str]
) -> None:
    aged("fresh", 10)
    aged("edge", 180)  # six months of thirty days: still in
    aged("late", 181)
    aged("year", 365)  # a year counts 365 days: still in for P1Y, out for P12M (360)
    aged("old", 700)
    body = ask("tier/aged", provider={"maxAge": max_age})
    assert order_of(world, body) == expected


def test_an_exact_model_is_served_whatever_its_age(world: World) -> None:
    aged("ancient", 3000)
    body = ask("age/ancient", provider={"maxAge": "P1M"})
    assert served_by(world, body) == "age/ancient"


def test_without_max_age_no_model_is_left_out_for_its_age(world: World) -> None:
    aged("fresh", 10)
    aged("ancient", 3000)
    assert order_of(world, ask("tier/aged")) == ["age-fresh", "age-ancient"]


def test_a_group_follows_the_organization_max_age(world: World) -> None:
    aged("fresh", 10)
    aged("late", 200)
    world.org.max_model_age = timedelta(days=180)
    world.org.save()
    assert order_of(world, ask("tier/aged")) == ["age-fresh"]


def test_the_call_overrides_the_organization_max_age(world: World) -> None:
    aged("fresh", 10)
    aged("late", 200)
    world.org.max_model_age = timedelta(days=180)
    world.org.save()
    body = ask("tier/aged", provider={"maxAge": "P1Y"})
    assert order_of(world, body) == ["age-fresh", "age-late"]


def test_max_age_and_deprecated_filter_star_and_auto(world: World) -> None:
    # Every model of the world catalog is older than 30 days; only the fresh one is left.
    fresh = aged("fresh", 5, tier="x")
    fresh.auto = True
    fresh.save()
    for selector in ("*", "auto"):
        body = ask(selector, provider={"maxAge": "P30D"})
        assert order_of(world, body) == ["age-fresh"]
        world.fake.reset()


def test_max_age_leaving_nothing_answers_404(world: World) -> None:
    error = error_of(
        world.post(ask("tier/high", provider={"maxAge": "P1D"})), 404, "model_not_found"
    )
    assert error["message"] == "No configured model answers to tier/high."


def embedding_model() -> Model:
    """An embedding model in every group a chat model could be: auto, tier/high, *."""
    row = Model.objects.create(
        id="openai/text-embedding-3-small", kind="embedding", tiers=["high"], auto=True
    )
    offer(row, Provider.objects.get(name="openai"), "text-embedding-3-small", "0.001", "0")
    return row


def test_a_chat_call_naming_an_embedding_model_is_a_404_saying_so(world: World) -> None:
    embedding_model()
    settle()
    error = error_of(world.post(ask("openai/text-embedding-3-small")), 404, "model_not_found")
    assert error["message"] == (
        "openai/text-embedding-3-small is an embedding model: call it on POST /v1/embeddings."
    )
    assert world.fake.requests() == []


@pytest.mark.parametrize(
    ("selector", "order"),
    [("auto", ["gpt-5-mini", *GPT5]), ("tier/high", ["deepseek-ai/DeepSeek-R1", *GPT5])],
)
def test_no_group_selector_picks_an_embedding_model_for_a_chat_call(
    world: World, selector: str, order: list[str]
) -> None:
    embedding_model()
    assert order_of(world, ask(selector)) == order


def test_the_star_selector_picks_no_embedding_model_for_a_chat_call(world: World) -> None:
    embedding_model()
    tried = order_of(world, ask("*"))
    assert "gpt-5-mini" in tried
    assert "text-embedding-3-small" not in tried


def test_beside_a_chat_model_an_embedding_model_named_is_left_out(world: World) -> None:
    embedding_model()
    body = {**ask("openai/text-embedding-3-small"), "models": ["openai/gpt-5-mini"]}
    assert order_of(world, body) == ["gpt-5-mini"]
