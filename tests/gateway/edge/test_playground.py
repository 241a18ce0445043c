"""The playground page (gateway.edge.playground): the catalog's models and selectors, each marked by
whether the organization can call it, the default on one that can, and the CSRF cookie its
calls need."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from accounts.models import Organization, SavedKey
from gateway.edge.playground import Choice
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


def test_only_models_with_a_key_can_be_picked_and_the_default_is_one(
    alice: User, acme: Organization
) -> None:
    offered("openai/gpt-5", keyed_provider("openai", "momor-key-0001"), tiers=["high"])
    offered("lab/unkeyed", keyed_provider("lab", ""), tiers=["lab"], auto=True)
    response = signed_in(alice).get("/playground/")
    choices = response.context["choices"]
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


def test_an_embedding_model_is_no_choice_of_the_chat_playground(
    alice: User, acme: Organization
) -> None:
    openai = keyed_provider("openai", "momor-key-0001")
    offered("openai/gpt-5", openai, tiers=["high"])
    embedding = Model.objects.create(id="openai/text-embedding-3-small", kind="embedding")
    Offering.objects.create(
        model=embedding, provider=openai, upstream_id="e", prompt_price=Decimal(1)
    )
    response = signed_in(alice).get("/playground/")
    assert response.status_code == 200
    assert response.context["choices"].models == [Choice("openai/gpt-5", True)]


def test_a_saved_key_makes_a_model_runnable(alice: User, acme: Organization) -> None:
    offered("lab/unkeyed", keyed_provider("lab", ""), tiers=[], auto=True)
    saved = SavedKey(organization=acme, provider="lab")
    saved.set_secret("acme-own-lab-key-0042")
    saved.save()
    choices = signed_in(alice).get("/playground/").context["choices"]
    assert (choices.default, choices.selectors, choices.models) == (
        "auto",
        [Choice("auto", True)],
        [Choice("lab/unkeyed", True)],
    )


def test_a_fresh_install_says_no_model_can_answer(alice: User, acme: Organization) -> None:
    offered("openai/gpt-5", keyed_provider("openai", ""), tiers=["high"], auto=True)
    Model.objects.create(id="lab/unoffered", tiers=[], auto=False)
    response = signed_in(alice).get("/playground/")
    assert response.context["choices"].any_runs is False
    page = response.content.decode()
    assert "No model can answer yet" in page
    assert '<a href="/provider-keys/">Save a provider key</a>' in page
