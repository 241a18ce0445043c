"""Selectors to models: an exact `publisher/name`, `tier/NAME`, `auto` or `*`, in the order
the call gives them. Only the tier, auto and * selectors are filtered by the deprecated and
maximum-age rules; a model named exactly is served whatever its state."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta

from gateway.catalog.snapshot import Catalog, ModelInfo


@dataclass(frozen=True, slots=True)
class AgeRules:
    allow_deprecated: bool
    max_age: timedelta | None
    today: date

    def admits(self, model: ModelInfo) -> bool:
        if model.deprecated and not self.allow_deprecated:
            return False
        if self.max_age is None:
            return True
        return model.released is not None and self.today - model.released <= self.max_age


def resolve(catalog: Catalog, selectors: Iterable[str], rules: AgeRules) -> list[ModelInfo]:
    """The distinct models the selectors name, in selector order, each with offerings."""
    seen: set[str] = set()
    found: list[ModelInfo] = []
    for selector in selectors:
        for model in _expand(catalog, selector.lower(), rules):
            if model.id not in seen and model.offerings:
                seen.add(model.id)
                found.append(model)
    return found


def _expand(catalog: Catalog, selector: str, rules: AgeRules) -> list[ModelInfo]:
    if selector.startswith("tier/"):
        tier = selector.removeprefix("tier/")
        return _group(catalog, rules, lambda m: tier in m.tiers)
    if selector == "auto":
        return _group(catalog, rules, lambda m: m.auto)
    if selector == "*":
        return _group(catalog, rules, lambda m: True)
    exact = catalog.models.get(selector)
    return [exact] if exact is not None else []


def _group(catalog: Catalog, rules: AgeRules, test: Callable[[ModelInfo], bool]) -> list[ModelInfo]:
    """Models of a group selector, cheapest first, newest first among equals."""
    members = [m for m in catalog.models.values() if test(m) and rules.admits(m)]
    return sorted(members, key=lambda m: (m.cheapest, -(m.released or date.min).toordinal(), m.id))
