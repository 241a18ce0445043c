"""The admin holds an embedding model's offerings to a prompt price alone, as the catalog
file does."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from gateway.models import Model, Offering, Provider

pytestmark = pytest.mark.django_db


def offering_form(model: Model, provider: Provider, **prices: str) -> dict[str, str]:
    return {
        "model": model.pk,
        "provider": str(provider.pk),
        "region": "",
        "upstream_id": "text-embedding-3-small",
        "prompt_price": "0.02",
        "completion_price": "0",
        "cache_read_price": "0",
        "cache_write_price": "0",
        "reasoning_efforts": "[]",
        "parameters": "[]",
        "enabled": "on",
        **prices,
    }


@pytest.fixture
def embedding() -> tuple[Model, Provider]:
    provider = Provider.objects.create(name="openai", api="openai", base_url="https://a.test/v1")
    return Model.objects.create(id="openai/text-embedding-3-small", kind="embedding"), provider


@pytest.mark.parametrize("field", ["completion_price", "cache_read_price", "cache_write_price"])
def test_an_embedding_offering_with_another_price_is_refused(
    admin_client: Client, embedding: tuple[Model, Provider], field: str
) -> None:
    form = offering_form(*embedding, **{field: "0.5"})
    response = admin_client.post("/admin/gateway/offering/add/", form)
    assert response.status_code == 200
    assert b"is an embedding model, priced by prompt alone." in response.content
    assert not Offering.objects.exists()


def test_an_embedding_offering_priced_by_its_prompt_is_saved(
    admin_client: Client, embedding: tuple[Model, Provider]
) -> None:
    response = admin_client.post("/admin/gateway/offering/add/", offering_form(*embedding))
    assert response.status_code == 302, response.content[-2000:]
    assert Offering.objects.get().prompt_price == Decimal("0.02")
