"""The playground page (gateway.edge.playground): for each of its modes (Chat Completions,
Messages, embeddings) the catalog's models and selectors that API calls, each marked by whether
the organization can call it, the default on one that can, the route its calls go to, and the
CSRF cookie its calls need."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User

from accounts.models import Organization, SavedKey
from gateway.edge.playground import Choice, Choices
from gateway.models import Model, Offering, Provider
from tests.ui_helpers import signed_in

pytestmark = pytest.mark.django_db


def offered(model_id: str, provider: Provider, *, tiers: list[str], auto: bool = False) -> None:
    model = Model.objects.create(id=model_id, tiers=tiers, auto=auto)
    Offering.objects.create(
        model=model,
        provider=provider,
        upstream_id=model_id.split("/")[1],
        prompt_price=Decimal(1),
        completion_price=Decimal(1),
    )


def keyed_provider(name: str, key: str) -> Provider:
    row = Provider(name=name, api="openai", base_url=f"https://{name}.example/v1")
    row.set_key(key)
    row.save()
    return row


def choices_of(response: Any) -> dict[str, Choices]:
    """Each mode's choices, by the API it calls."""
    return {mode.api: mode.choices for mode in response.context["modes"]}


def test_only_models_with_a_key_can_be_picked_and_the_default_is_one(
    alice: User, acme: Organization
) -> None:
    offered("openai/gpt-5", keyed_provider("openai", "momor-key-0001"), tiers=["high"])
    offered("lab/unkeyed", keyed_provider("lab", ""), tiers=["lab"], auto=True)
    response = signed_in(alice).get("/playground/")
    choices = choices_of(response)["chat"]
    assert choices.selectors == [
        Choice("auto", False),
        Choice("tier/high", True),
        Choice("tier/lab", False),
    ]
    assert choices.models == [Choice("lab/unkeyed", False), Choice("openai/gpt-5", True)]
    page = response.content.decode()
    assert '<option value="tier/high" selected>tier/high</option>' in page
    assert '<option value="lab/unkeyed" disabled>lab/unkeyed (no key)</option>' in page
    assert "csrftoken" in response.cookies


def test_each_mode_lists_the_models_its_api_calls(alice: User, acme: Organization) -> None:
    openai = keyed_provider("openai", "momor-key-0001")
    offered("openai/gpt-5", openai, tiers=["high"])
    embedding = Model.objects.create(
        id="openai/text-embedding-3-small", kind="embedding", tiers=["small"], auto=True
    )
    Offering.objects.create(
        model=embedding, provider=openai, upstream_id="e", prompt_price=Decimal(1)
    )
    response = signed_in(alice).get("/playground/")
    assert response.status_code == 200
    chat = Choices(
        selectors=[Choice("auto", False), Choice("tier/high", True)],
        models=[Choice("openai/gpt-5", True)],
    )
    embeddings = Choices(
        selectors=[Choice("auto", True), Choice("tier/small", True)],
        models=[Choice("openai/text-embedding-3-small", True)],
    )
    assert choices_of(response) == {"chat": chat, "messages": chat, "embeddings": embeddings}
    assert [(m.api, m.label, m.endpoint) for m in response.context["modes"]] == [
        ("chat", "Chat Completions", "/v1/chat/completions"),
        ("messages", "Messages", "/v1/messages"),
        ("embeddings", "Embeddings", "/v1/embeddings"),
    ]
    page = response.content.decode()
    assert (
        '<template id="pg-choices-embeddings" data-endpoint="/v1/embeddings" data-runs="true">'
        in page
    )
    assert 'data-record="/v1/generation" data-records="/generations/"' in page


def test_a_mode_without_models_says_the_catalog_has_none(alice: User, acme: Organization) -> None:
    offered("openai/gpt-5", keyed_provider("openai", "momor-key-0001"), tiers=["high"])
    response = signed_in(alice).get("/playground/")
    assert choices_of(response)["embeddings"] == Choices([Choice("auto", False)], [])
    page = response.content.decode()
    template = page[page.index('<template id="pg-choices-embeddings"') :]
    template = template[: template.index("</template>")]
    assert "The catalog has no model for this API yet" in template


def test_a_saved_key_makes_a_model_runnable(alice: User, acme: Organization) -> None:
    offered("lab/unkeyed", keyed_provider("lab", ""), tiers=[], auto=True)
    saved = SavedKey(organization=acme, provider="lab")
    saved.set_secret("acme-own-lab-key-0042")
    saved.save()
    choices = choices_of(signed_in(alice).get("/playground/"))["chat"]
    assert (choices.default, choices.selectors, choices.models) == (
        "auto",
        [Choice("auto", True)],
        [Choice("lab/unkeyed", True)],
    )


def test_a_fresh_install_says_no_model_can_answer(alice: User, acme: Organization) -> None:
    offered("openai/gpt-5", keyed_provider("openai", ""), tiers=["high"], auto=True)
    Model.objects.create(id="lab/unoffered", tiers=[], auto=False)
    response = signed_in(alice).get("/playground/")
    assert [c.any_runs for c in choices_of(response).values()] == [False, False, False]
    page = response.content.decode()
    assert "No model can answer yet" in page
    assert '<a href="/provider-keys/">Save a provider key</a>' in page
