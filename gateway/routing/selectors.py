"""Selectors to models: an exact `publisher/name`, `tier/NAME`, `auto` or `*`, in the order
the call gives them. Only the tier, auto and * selectors are filtered by the deprecated and
maximum-age rules; a model named exactly is served whatever its state."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, timedelta

from gateway.catalog.snapshot import Catalog, ModelInfo
from gateway.models import ModelKind
from gateway.request.errors import GatewayError, model_not_found
from gateway.request.identity import OrgInfo
from gateway.request.options import CallOptions


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


def age_rules(options: CallOptions, org: OrgInfo) -> AgeRules:
    """The call's `provider.deprecated` and `provider.maxAge`, else the organization's."""
    prefs = options.prefs
    return AgeRules(
        allow_deprecated=org.allow_deprecated if prefs.deprecated is None else prefs.deprecated,
        max_age=prefs.max_age if prefs.max_age_given else org.max_age,
        today=date.today(),  # noqa: DTZ011 - release dates are calendar days
    )


def resolve(
    catalog: Catalog, selectors: Iterable[str], rules: AgeRules, kind: str = ModelKind.CHAT
) -> list[ModelInfo]:
    """The distinct models of `kind` the selectors name, in selector order, each with
    offerings. A group selector names only models of that kind; where every model named
    exactly is of the other kind, the call is refused with 404 saying so."""
    seen: set[str] = set()
    found: list[ModelInfo] = []
    other: ModelInfo | None = None
    for selector in selectors:
        for model in expand(catalog, selector, rules, kind):
            if model.id in seen or not model.offerings:
                continue
            seen.add(model.id)
            if model.kind == kind:
                found.append(model)
            else:
                other = other or model
    if not found and other is not None:
        raise wrong_kind(other)
    return found


def wrong_kind(model: ModelInfo) -> GatewayError:
    if model.kind == ModelKind.EMBEDDING:
        where = "call it on POST /v1/embeddings"
    else:
        where = "it answers chat, Messages and Responses calls, not embeddings calls"
    return model_not_found(f"{model.id} is {KIND_NAMES[model.kind]} model: {where}.")


KIND_NAMES: dict[str, str] = {ModelKind.CHAT: "a chat", ModelKind.EMBEDDING: "an embedding"}


def expand(catalog: Catalog, selector: str, rules: AgeRules, kind: str) -> list[ModelInfo]:
    """The models one selector names: a group's of `kind`, an exact one whatever its kind."""
    selector = selector.lower()
    if selector.startswith("tier/"):
        tier = selector.removeprefix("tier/")
        return _group(catalog, rules, lambda m: m.kind == kind and tier in m.tiers)
    if selector == "auto":
        return _group(catalog, rules, lambda m: m.kind == kind and m.auto)
    if selector == "*":
        return _group(catalog, rules, lambda m: m.kind == kind)
    exact = catalog.models.get(selector)
    return [exact] if exact is not None else []


def _group(catalog: Catalog, rules: AgeRules, test: Callable[[ModelInfo], bool]) -> list[ModelInfo]:
    """Models of a group selector, cheapest first, newest first among equals."""
    members = [m for m in catalog.models.values() if test(m) and rules.admits(m)]
    return sorted(members, key=lambda m: (m.cheapest, -(m.released or date.min).toordinal(), m.id))
