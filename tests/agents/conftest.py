"""The agents' catalog beside the `world` (a live gateway on loopback, the fake upstream behind
it, acme with a key and credits): one model served by Anthropic, one by OpenAI, each with
tools, so an agent's call reaches Anthropic's or OpenAI's API as written or translated."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gateway.models import Provider
from tests.gateway.calls import settle
from tests.gateway.conftest import World, model, offer, provider, world  # noqa: F401 - the fixture, shared

ON_ANTHROPIC = "acme/claude-agent"
ANTHROPIC_UPSTREAM = "claude-agent-1"
ON_OPENAI = "acme/gpt-agent"
OPENAI_UPSTREAM = "gpt-agent-1"
# Dollars per million prompt and completion tokens, by Momor's model id.
PRICES = {ON_ANTHROPIC: (Decimal(3), Decimal(15)), ON_OPENAI: (Decimal("1.25"), Decimal(10))}


@pytest.fixture(autouse=True)
def agent_models(world: World) -> None:  # noqa: F811 - the world fixture, imported above
    anthropic = provider("anthropic", "anthropic", f"{world.fake.url}/anthropic")
    served = {ON_ANTHROPIC: (anthropic, ANTHROPIC_UPSTREAM)}
    served[ON_OPENAI] = (Provider.objects.get(name="openai"), OPENAI_UPSTREAM)
    for model_id, (row, upstream) in served.items():
        prompt, completion = PRICES[model_id]
        offer(model(model_id), row, upstream, str(prompt), str(completion), tools=True)
    settle()
