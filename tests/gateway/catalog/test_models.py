"""Invariants of the catalog's rows: one offering per place, Momor's own keys encrypted."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, connection, transaction
from django.test import override_settings

from gateway.models import Model, Offering, Provider, Region

PROVIDER_KEY = "sk-momor-own-azure-key-0123456789-PvKy"


@pytest.fixture
def azure(db: None) -> Provider:
    return Provider.objects.create(name="azure", api="azure", base_url="https://azure.example/v1")


@pytest.fixture
def eu(azure: Provider) -> Region:
    return Region.objects.create(provider=azure, name="eu", base_url="https://eu.example/v1")


@pytest.fixture
def us(azure: Provider) -> Region:
    return Region.objects.create(provider=azure, name="us", base_url="https://us.example/v1")


@pytest.fixture
def gpt5(db: None) -> Model:
    return Model.objects.create(id="openai/gpt-5")


def _offer(model: Model, provider: Provider, region: Region | None = None) -> Offering:
    return Offering.objects.create(
        model=model, provider=provider, region=region, upstream_id="gpt-5"
    )


def _raw_key_column(provider: Provider) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT key_encrypted FROM gateway_provider WHERE id = %s", [provider.pk])
        (value,) = cursor.fetchone()
    return str(value)


# Offerings


def test_a_provider_offers_a_model_once_without_a_region(gpt5: Model, azure: Provider) -> None:
    _offer(gpt5, azure)
    with pytest.raises(IntegrityError), transaction.atomic():
        _offer(gpt5, azure)
    assert Offering.objects.count() == 1


def test_a_region_offers_a_model_once(gpt5: Model, azure: Provider, eu: Region) -> None:
    _offer(gpt5, azure, eu)
    with pytest.raises(IntegrityError), transaction.atomic():
        _offer(gpt5, azure, eu)
    assert Offering.objects.count() == 1


def test_a_model_is_offered_at_the_root_and_in_each_region(
    gpt5: Model, azure: Provider, eu: Region, us: Region
) -> None:
    offerings = [_offer(gpt5, azure), _offer(gpt5, azure, eu), _offer(gpt5, azure, us)]
    assert [offering.place for offering in offerings] == ["azure", "azure@eu", "azure@us"]
    assert Offering.objects.count() == 3


def test_an_offering_names_its_model_and_place(gpt5: Model, azure: Provider, eu: Region) -> None:
    assert str(_offer(gpt5, azure)) == "openai/gpt-5 on azure"
    assert str(_offer(gpt5, azure, eu)) == "openai/gpt-5 on azure@eu"
    assert str(eu) == "azure@eu"
    assert gpt5.publisher == "openai"


# Momor's own provider keys


def test_it_stores_momors_provider_key_encrypted(azure: Provider) -> None:
    azure.set_key(PROVIDER_KEY)
    azure.save()
    column = _raw_key_column(azure)
    assert PROVIDER_KEY not in column
    assert column == azure.key_encrypted
    assert Provider.objects.get(pk=azure.pk).stored_key() == PROVIDER_KEY


def test_an_empty_key_clears_the_stored_one(azure: Provider) -> None:
    azure.set_key(PROVIDER_KEY)
    azure.save()
    azure.set_key("")
    azure.save()
    assert _raw_key_column(azure) == ""
    assert Provider.objects.get(pk=azure.pk).stored_key() == ""


def test_a_provider_without_a_stored_key_needs_no_encryption_key(azure: Provider) -> None:
    with override_settings(ENCRYPTION_KEY=""):
        assert azure.stored_key() == ""


def test_another_encryption_key_cannot_decrypt_momors_provider_key(azure: Provider) -> None:
    azure.set_key(PROVIDER_KEY)
    azure.save()
    with (
        override_settings(ENCRYPTION_KEY="another-encryption-key"),
        pytest.raises(ImproperlyConfigured) as error,
    ):
        Provider.objects.get(pk=azure.pk).stored_key()
    assert PROVIDER_KEY not in str(error.value)
    assert str(error.value) == (
        "A stored provider key cannot be decrypted: MOMOR_ENCRYPTION_KEY has changed"
    )
