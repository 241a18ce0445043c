"""The catalog's provider places (roots and `name@region`), as accounts' saved keys ask for them
(`accounts.hooks.ProviderPlaces`, registered in `GatewayConfig.ready()`)."""

from __future__ import annotations

from gateway.models import Provider, Region


class CatalogPlaces:
    """Read from the database on each question: the saved-key forms are rare, and must see a
    provider added a moment ago."""

    def all(self) -> list[str]:
        places: list[str] = []
        for provider in Provider.objects.prefetch_related("regions").order_by("name"):
            places.append(provider.name)
            places += [f"{provider.name}@{region.name}" for region in provider.regions.all()]
        return places

    def has_provider(self, name: str) -> bool:
        return Provider.objects.filter(name=name).exists()

    def has_region(self, provider: str, region: str) -> bool:
        return Region.objects.filter(provider__name=provider, name=region).exists()
