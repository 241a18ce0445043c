"""The candidate list of one call: every (offering, key) pair that may serve it, in the order
they are tried."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gateway.catalog.snapshot import ModelInfo, OfferingInfo
from gateway.models import ModelKind
from gateway.providers.contract import Target
from gateway.request.call import AskedCall, ChatCall
from gateway.request.errors import GatewayError, excerpt, model_not_found, unsupported_parameter
from gateway.request.identity import OrgInfo
from gateway.request.options import CallOptions, ProviderPrefs
from gateway.routing.filters import NOTHING_ASKED, PRICE_FILTER, Asked, asked_of, left_out
from gateway.routing.performance import Figures

KeySource = Literal["own", "momor"]
PART_MODALITIES = {"image_url": "image", "input_audio": "audio", "file": "file"}


@dataclass(frozen=True, slots=True)
class Candidate:
    offering: OfferingInfo
    secret: str
    key_source: KeySource
    targets: tuple[Target, Target] = field(init=False, repr=False, compare=False)
    """What its adapter is given for a plain call and for a stream, built once."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", (_target(self, False), _target(self, True)))


def target_of(candidate: Candidate, *, stream: bool) -> Target:
    """What the candidate's adapter is given: the offering and key, without prices or
    anything else of routing's."""
    return candidate.targets[stream]


def _target(candidate: Candidate, stream: bool) -> Target:
    offering = candidate.offering
    return Target(
        base_url=offering.base_url,
        secret=candidate.secret,
        model_id=offering.model_id,
        upstream_id=offering.upstream_id,
        region=offering.region,
        stream=stream,
        reasoning_efforts=offering.reasoning_efforts,
        momor_key=candidate.key_source == "momor",
    )


@dataclass(frozen=True, slots=True)
class Needs:
    """What the call asks of an offering."""

    tools: bool
    json_schema: bool
    modalities: frozenset[str]
    asked: Asked
    kind: str = ModelKind.CHAT
    """The kind of model that answers it."""


def needs_of(asked: AskedCall) -> Needs:
    if not isinstance(asked, ChatCall):
        return Needs(False, False, frozenset(), NOTHING_ASKED, kind=asked.kind)
    request = asked.request
    response_format = request.get("response_format")
    tools = bool(request.get("tools"))
    json_schema = isinstance(response_format, dict) and response_format.get("type") == "json_schema"
    return Needs(
        tools=tools,
        json_schema=json_schema,
        modalities=_modalities(request.get("messages")),
        asked=asked_of(request, tools, json_schema),
    )


@dataclass(slots=True)
class Plan:
    """Each offering the filters left out."""

    excluded: list[dict[str, str]] = field(default_factory=list)
    by_price: bool = False
    """The price ceiling left out an offering every other filter let through."""


def _modalities(messages: object) -> frozenset[str]:
    found: set[str] = set()
    if not isinstance(messages, list):
        return frozenset()
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind in PART_MODALITIES:
                    found.add(PART_MODALITIES[kind])
    return frozenset(found)


def candidates(
    models: list[ModelInfo],
    options: CallOptions,
    org: OrgInfo,
    needs: Needs,
    figures: dict[int, Figures] | None = None,
    plan: Plan | None = None,
) -> list[Candidate]:
    """Order the offerings of the resolved models and pair each with the keys that may call it;
    `plan` notes each offering the provider filters left out, and why."""
    plan = plan if plan is not None else Plan()
    offerings = [o for m in models for o in _ordered(m, options.prefs, needs, plan, figures)]
    if not offerings:
        raise _filtered_out(options, plan)
    capable = [o for o in offerings if needs.modalities <= o.input_modalities]
    if not capable:
        raise unsupported_parameter(
            "Models matched, and none of them could carry the call: "
            f"no offering takes {', '.join(sorted(needs.modalities))} input."
        )
    capable.sort(
        key=lambda o: (needs.tools and not o.tools, needs.json_schema and not o.json_schema)
    )
    zdr = options.prefs.zdr or org.zdr_hold
    found = [c for o in capable for c in keyed(o, org, zdr)]
    if not found:
        raise _no_key(options, zdr)
    return found


def _ordered(
    model: ModelInfo,
    prefs: ProviderPrefs,
    needs: Needs,
    plan: Plan,
    figures: dict[int, Figures] | None,
) -> list[OfferingInfo]:
    kept = []
    for offering in model.offerings:
        out = left_out(offering, prefs, needs.asked)
        if out is None:
            kept.append(offering)
        else:
            plan.excluded.append(
                {"model": offering.model_id, "provider": offering.place, "reason": out[1]}
            )
            plan.by_price = plan.by_price or out[0] is PRICE_FILTER
    if prefs.sort != "price":
        kept.sort(key=lambda o: _measured_rank(o, prefs.sort, figures or {}))
    if not prefs.order:
        return kept
    rank = {place: i for i, place in reversed(list(enumerate(prefs.order)))}
    last = len(prefs.order)

    def lead(o: OfferingInfo) -> int:
        # A region named in the order ranks where it is named; else with its root.
        return rank.get(o.place, rank.get(o.provider.name, last))

    return sorted(kept, key=lead)


def keyed(offering: OfferingInfo, org: OrgInfo, zdr: bool) -> list[Candidate]:
    """The offering paired with each key that may call it: the saved key first, then Momor's."""
    found: list[Candidate] = []
    saved = org.saved_keys.get(offering.place) or org.saved_keys.get(offering.provider.name)
    if saved is not None and (saved.zdr or not zdr):
        found.append(Candidate(offering, saved.secret, "own"))
    momor_key = offering.provider.momor_key
    if momor_key and (offering.provider.zdr or not zdr):
        found.append(Candidate(offering, momor_key, "momor"))
    return found


def _no_key(options: CallOptions, zdr: bool) -> GatewayError:
    asked = selectors_named(options)
    if zdr:
        return model_not_found(
            f"No model answering to {asked} runs under zero data retention: none is served on "
            "a saved key marked zdr or on a Momor key its agreements cover."
        )
    return model_not_found(
        f"No model answering to {asked} runs on your own key or on a key Momor resells."
    )


def _measured_rank(
    offering: OfferingInfo, sort: str, figures: dict[int, Figures]
) -> tuple[int, float]:
    """Offerings with figures first, best first; the others after them, in price order."""
    found = figures.get(offering.id)
    if found is None:
        return (1, 0.0)
    if sort == "throughput":
        return (0, -found.throughput) if found.throughput is not None else (1, 0.0)
    if sort == "latency":
        return (0, found.latency_ms) if found.latency_ms is not None else (1, 0.0)
    return (0, -found.quality)


def _filtered_out(options: CallOptions, plan: Plan) -> GatewayError:
    asked = selectors_named(options)
    if plan.by_price:
        return model_not_found(
            f"The price ceiling (provider.max_price) left nothing: no offering of {asked} that "
            "the other provider filters leave in is priced at or below it."
        )
    return model_not_found(
        f"No model answering to {asked} runs on a provider this call's provider filters leave in."
    )


def nothing_answers(options: CallOptions) -> GatewayError:
    return model_not_found(f"No configured model answers to {selectors_named(options)}.")


# A refusal names this many of the call's selectors, and how many more it gave.
NAMED_SELECTORS = 8


def selectors_named(options: CallOptions) -> str:
    named = ", ".join(excerpt(s) for s in options.selectors[:NAMED_SELECTORS])
    more = len(options.selectors) - NAMED_SELECTORS
    return named + (f" and {more} more" if more > 0 else "")
