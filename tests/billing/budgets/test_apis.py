"""Every API a call comes in on is held to the same budgets: a Messages, Responses or embeddings
call reserves its worst cost on them, is refused with 402 when they cannot cover it (Messages
in Anthropic's shape, as billing_error), and its cost counts against them once it is served."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from accounts.models import BudgetPeriod
from billing.calls.cost import from_units
from billing.recording.hand_off import drain
from gateway.models import Model, Provider
from tests.billing.admission.test_reservations import SONNET, add_claude
from tests.billing.budgets.helpers import budget, refused, reservation_while_in_flight
from tests.billing.conftest import World, catalog_current
from tests.conftest import make_key, make_org
from tests.gateway.conftest import offer

pytestmark = pytest.mark.django_db(transaction=True)

EMBEDDER = "openai/text-embedding-3-small"
CALLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "messages": ("/v1/messages", SONNET, {
        "model": "anthropic/claude-sonnet-4-5", "max_tokens": 300,
        "messages": [{"role": "user", "content": "Hi"}],
    }),
    "responses": ("/v1/responses", "gpt-5-mini", {
        "model": "openai/gpt-5-mini", "input": "Hi", "max_output_tokens": 300,
    }),
    "embeddings": ("/v1/embeddings", "text-embedding-3-small", {
        "model": EMBEDDER, "input": ["one two", "three"],
    }),
}  # fmt: skip


@pytest.fixture
def every_api(world: World) -> World:
    add_claude(world)
    embedder = Model.objects.create(id=EMBEDDER, kind="embedding")
    offer(embedder, Provider.objects.get(name="openai"), "text-embedding-3-small", "0.02", "0")
    catalog_current()
    return world


def error_of(api: str, body: dict[str, Any]) -> tuple[str, str]:
    """The refusal's type and message, in the API's own shape."""
    if api == "messages":
        assert body["type"] == "error"
        return body["error"]["type"], body["error"]["message"]
    assert body["error"]["code"] == "insufficient_credits"
    return body["error"]["type"], body["error"]["message"]


@pytest.mark.parametrize("api", list(CALLS))
def test_each_api_is_held_to_the_budget(every_api: World, api: str) -> None:
    """The organization's daily budget is set to one call's worst cost: the first call is
    served, and its cost leaves too little for the second."""
    path, upstream, body = CALLS[api]
    every_api.fake.script(upstream, delay_first_byte=0.5)
    worst = from_units(
        reservation_while_in_flight(every_api.url, path, body, every_api.key, every_api.org.pk)
    )
    every_api.fake.reset()
    org = make_org("budgeted", credits=Decimal(10))
    key, _ = make_key(org, name="budgeted")
    budget(org, BudgetPeriod.DAILY, worst)

    first = every_api.post(body, key=key, path=path)
    assert drain()
    second = every_api.post(body, key=key, path=path)

    assert first.status_code == 200, first.text
    assert second.status_code == 402, second.text
    kind = "billing_error" if api == "messages" else "insufficient_quota"
    message = refused(worst, "the organization's daily budget", worst, "daily")
    assert error_of(api, second.json()) == (kind, message)
