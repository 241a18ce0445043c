"""The catalog's provider places, as accounts' saved keys ask for them (gateway.catalog.places, the
`ProviderPlaces` hook that gateway registers for accounts)."""

from __future__ import annotations

import pytest

from accounts import hooks
from gateway.catalog.places import CatalogPlaces
from gateway.models import Provider, Region

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog() -> None:
    for name in ("openai", "azure"):
        Provider.objects.create(name=name, api=name, base_url=f"https://{name}.example/v1")
    azure = Provider.objects.get(name="azure")
    for region in ("us", "eu"):
        Region.objects.create(provider=azure, name=region, base_url="https://r.example/v1")


@pytest.mark.usefixtures("catalog")
def test_the_places_are_each_root_by_name_followed_by_its_regions() -> None:
    assert CatalogPlaces().all() == ["azure", "azure@eu", "azure@us", "openai"]


@pytest.mark.usefixtures("catalog")
def test_providers_and_regions_are_known_by_name() -> None:
    places = CatalogPlaces()
    assert (places.has_provider("azure"), places.has_provider("mistral")) == (True, False)
    assert (places.has_region("azure", "eu"), places.has_region("openai", "eu")) == (True, False)


@pytest.mark.usefixtures("catalog")
def test_gateway_registers_them_for_accounts() -> None:
    assert isinstance(hooks.provider_places(), CatalogPlaces)
    assert hooks.provider_places().all() == CatalogPlaces().all()
