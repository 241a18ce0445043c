"""The playground: the page only; answers stream from the real completions endpoint, called
by the browser with the member's session and CSRF token. The page says which models and
selectors can answer for the organization (an offering with a key to call it: a saved key or
Momor's own) and starts on one that can."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from accounts.models import Membership, Role
from accounts.permissions import role_required
from gateway.catalog.snapshot import Catalog, ModelInfo, catalog_build
from gateway.catalog.state import STATE
from gateway.models import ModelKind
from gateway.request.identity import OrgInfo, org_info
from gateway.routing.candidates import keyed
from gateway.routing.selectors import AgeRules, resolve


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    runs: bool


@dataclass(frozen=True, slots=True)
class Choices:
    selectors: list[Choice]
    models: list[Choice]

    @property
    def any_runs(self) -> bool:
        return any(c.runs for c in [*self.selectors, *self.models])

    @property
    def default(self) -> str:
        """The first selector that can answer, else the first model, else auto."""
        runnable = [c.value for c in [*self.selectors, *self.models] if c.runs]
        return runnable[0] if runnable else "auto"


def playground_choices(catalog: Catalog, org: OrgInfo) -> Choices:
    """The catalog's models, its tier selectors and auto, each marked by whether it can run."""
    rules = AgeRules(org.allow_deprecated, org.max_age, date.today())  # noqa: DTZ011 - release days

    def runs(selector: str) -> bool:
        return any(_has_key(model, org) for model in resolve(catalog, [selector], rules))

    chat = [m for m in catalog.models.values() if m.kind == ModelKind.CHAT]
    models = sorted(m.id for m in chat)
    tiers = sorted({f"tier/{t}" for m in chat for t in m.tiers})
    return Choices(
        selectors=[Choice(s, runs(s)) for s in ["auto", *tiers]],
        models=[Choice(m, runs(m)) for m in models],
    )


def _has_key(model: ModelInfo, org: OrgInfo) -> bool:
    return any(keyed(offering, org, org.zdr_hold) for offering in model.offerings)


@ensure_csrf_cookie
@role_required(Role.MEMBER)
def playground(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = org_info(membership.organization_id)
    if org is None:
        raise Http404("No such organization.")
    # The process's snapshot, kept current by the refresher once a call has loaded it.
    choices = playground_choices(STATE.catalog or catalog_build(), org)
    return render(request, "gateway/playground.html", {"choices": choices})
