"""The playground: the page only; answers come from the real endpoints (Chat Completions,
Messages, embeddings), called by the browser with the member's session and CSRF token, so
they are recorded and billed as any call of the organization. Each mode lists the models and
selectors its API calls, each marked by whether it can answer for the organization (an
offering with a key to call it: a saved key or Momor's own), and starts on one that can."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.csrf import ensure_csrf_cookie

from accounts.models import Membership, Role
from accounts.permissions import role_required
from billing.calls.records import Api
from gateway.catalog.snapshot import Catalog, ModelInfo, catalog_build
from gateway.catalog.state import STATE
from gateway.edge.models_list import APIS_OF_KIND
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


@dataclass(frozen=True, slots=True)
class Mode:
    """One API the playground calls: its record's name, its label and route, its choices."""

    api: Api
    label: str
    endpoint: str
    choices: Choices


# The playground's modes, in the order the page offers them: the record's name of the API, its
# label, the name of its route.
MODES: tuple[tuple[Api, str, str], ...] = (
    ("chat", "Chat Completions", "chat-completions"),
    ("messages", "Messages", "messages"),
    ("embeddings", "Embeddings", "embeddings"),
)


def playground_choices(catalog: Catalog, org: OrgInfo, api: Api) -> Choices:
    """The catalog's models that `api` calls, their tier selectors and auto, each marked by
    whether it can run."""
    rules = AgeRules(org.allow_deprecated, org.max_age, date.today())  # noqa: DTZ011 - release days
    kind = next(kind for kind, apis in APIS_OF_KIND.items() if api in apis)

    def runs(selector: str) -> bool:
        return any(_has_key(model, org) for model in resolve(catalog, [selector], rules, kind))

    called = [m for m in catalog.models.values() if m.kind == kind]
    models = sorted(m.id for m in called)
    tiers = sorted({f"tier/{t}" for m in called for t in m.tiers})
    return Choices(
        selectors=[Choice(s, runs(s)) for s in ["auto", *tiers]],
        models=[Choice(m, runs(m)) for m in models],
    )


def playground_modes(catalog: Catalog, org: OrgInfo) -> list[Mode]:
    return [
        Mode(api, label, reverse(route), playground_choices(catalog, org, api))
        for api, label, route in MODES
    ]


def _has_key(model: ModelInfo, org: OrgInfo) -> bool:
    return any(keyed(offering, org, org.zdr_hold) for offering in model.offerings)


@ensure_csrf_cookie
@role_required(Role.MEMBER)
def playground(request: HttpRequest, membership: Membership) -> HttpResponse:
    org = org_info(membership.organization_id)
    if org is None:
        raise Http404("No such organization.")
    # The process's snapshot, kept current by the refresher once a call has loaded it.
    modes = playground_modes(STATE.catalog or catalog_build(), org)
    return render(request, "gateway/playground.html", {"modes": modes})
