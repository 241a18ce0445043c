"""What routing found for one call, kept as it goes for a call that asks how it was routed
(`X-Momor-Metadata: enabled`); `gateway.relay.metadata` writes it out with the call's tries."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.catalog.snapshot import Catalog, ModelInfo
from gateway.request.identity import OrgInfo
from gateway.request.options import CallOptions
from gateway.routing.candidates import Candidate, Needs, Plan
from gateway.routing.selectors import AgeRules


@dataclass(slots=True)
class RoutingTrace:
    """What routing found for one call, kept as it goes."""

    catalog: Catalog | None = None
    options: CallOptions | None = None
    rules: AgeRules | None = None
    models: list[ModelInfo] = field(default_factory=list)
    needs: Needs | None = None
    org: OrgInfo | None = None
    plan: Plan | None = None
    ranked: list[Candidate] = field(default_factory=list)
    """Every candidate in order, before provider.allow_fallbacks keeps the first alone."""
    pin: str | None = None

    def routed(self, found: list[Candidate], pin: str | None) -> None:
        self.ranked, self.pin = list(found), pin
