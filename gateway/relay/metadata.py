"""`momor_metadata`: how a call was routed, for a call sent with `X-Momor-Metadata: enabled`.

What each selector named (and which models the deprecated and age rules left out), every
candidate in the order it was tried with why it ranks there, what each try came to (status,
error code, message, time), and every offering left out with why. It is built only for a call
that asks for it: routing keeps a `RoutingTrace` for that call alone. It names offerings by
their place and display name and never holds a key or a provider's address; a try's message
is the one the call's record keeps, keys masked."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from gateway.catalog.snapshot import Catalog, ModelInfo, OfferingInfo
from gateway.models import ModelKind
from gateway.request.options import CallOptions
from gateway.routing.candidates import Candidate, Needs, keyed
from gateway.routing.selectors import KIND_NAMES, AgeRules, expand
from gateway.routing.sessions import pin_of
from gateway.routing.trace import RoutingTrace

if TYPE_CHECKING:
    from gateway.relay.attempts import Attempt, Call

HEADER = "x-momor-metadata"
Json = dict[str, Any]
GROUPS = ("tier/", "auto", "*")


def wanted(headers: Mapping[str, str]) -> bool:
    """`X-Momor-Metadata: enabled` (any case); any other value, or none, leaves it off."""
    return headers.get(HEADER, "").strip().lower() == "enabled"


def refusal_metadata(trace: RoutingTrace) -> Json | None:
    """For a call refused before any try (no model, or no offering left)."""
    if trace.catalog is None:
        return None
    return _metadata(trace, [], None)


def served_metadata(call: Call) -> Json | None:
    """For a call its last try serves."""
    return None if call.trace is None else _metadata(call.trace, call.tries, "served")


def ended_metadata(call: Call, ending: str | None) -> Json | None:
    """For a call whose tries all failed (`ending` None), or a stream that ended `served` or
    `broken` (it failed after it had shown something)."""
    return None if call.trace is None else _metadata(call.trace, call.tries, ending)


def _metadata(trace: RoutingTrace, tries: list[Attempt], ending: str | None) -> Json:
    ranked = [_ranked(trace, i, c, tries, ending) for i, c in enumerate(trace.ranked)]
    left_out = _left_out(trace)
    candidates = ranked + left_out
    options = trace.options
    return {
        "requested": list(options.selectors) if options else [],
        "selectors": _selectors(trace),
        "provider": _provider(trace),
        "summary": _summary(ranked, left_out, ending),
        "candidates": candidates,
    }


def _provider(trace: RoutingTrace) -> Json:
    """The provider options in force: those the call set, and the organization's policy where
    it applies (its zero data retention hold, its deprecated and age defaults)."""
    options, org, rules = trace.options, trace.org, trace.rules
    if options is None or org is None or rules is None:
        return {}
    prefs = options.prefs
    found: Json = {"order": list(prefs.order)} if prefs.order else {}
    found.update(prefs.given())
    if prefs.zdr or org.zdr_hold:
        found["zdr"] = True
    if rules.allow_deprecated:
        found["deprecated"] = True
    if rules.max_age is not None:
        found["max_age_days"] = rules.max_age.days
    return found


# Candidates in order


def _ranked(
    trace: RoutingTrace, index: int, candidate: Candidate, tries: list[Attempt], ending: str | None
) -> Json:
    entry = _named(candidate.offering)
    entry.update(position=index + 1, key=candidate.key_source, why=_why(trace, index, candidate))
    if index < len(tries):
        entry.update(_tried(tries[index], last=index == len(tries) - 1, ending=ending))
    elif _kept_first_alone(trace, index):
        entry.update(outcome="left_out", detail="provider.allow_fallbacks is false: only the "
                     "first candidate is tried")  # fmt: skip
    else:
        entry.update(outcome="not_tried", detail=_not_tried(tries, ending))
    return entry


def _kept_first_alone(trace: RoutingTrace, index: int) -> bool:
    options = trace.options
    return index > 0 and options is not None and not options.prefs.allow_fallbacks


def _tried(attempt: Attempt, *, last: bool, ending: str | None) -> Json:
    row, failure = attempt.row, attempt.failure
    if last and ending == "served":
        status = row.http_status or 200
        return {"outcome": "served", "status": status, "time_ms": _time(attempt)}
    if failure is None:
        return {"outcome": "not_finished", "time_ms": _time(attempt)}
    error = failure.error
    outcome = "failed"
    if last and ending == "broken":
        outcome = "broken"
    elif failure.message.startswith("cannot carry the call"):
        outcome = "cannot_carry"
    return {
        "outcome": outcome,
        "status": failure.status,
        "code": error["code"] if error else None,
        "detail": failure.message,
        "moves_on": failure.moves_on,
        "time_ms": row.latency_ms,
    }


def _time(attempt: Attempt) -> int:
    return attempt.row.latency_ms or attempt.elapsed_ms()


def _not_tried(tries: list[Attempt], ending: str | None) -> str:
    if ending is not None:
        return "an earlier candidate served the call"
    last = tries[-1].failure if tries else None
    if last is not None and not last.moves_on:
        return (
            f"the call stopped at candidate {len(tries)}: its error is about the call itself, "
            "which every provider would refuse alike"
        )
    return "not reached"


def _why(trace: RoutingTrace, index: int, candidate: Candidate) -> list[str]:
    offering = candidate.offering
    reasons: list[str] = []
    if index == 0 and trace.pin is not None and pin_of(candidate) == trace.pin:
        reasons.append("this session's offering: it served the session's last call")
    reasons += _model_rank(trace, offering)
    if trace.options is not None:
        reasons += _provider_rank(trace.options, offering)
    if trace.needs is not None:
        reasons += _capability_rank(trace.needs, offering)
    reasons.append(_key_reason(trace, index, candidate))
    return reasons


def _model_rank(trace: RoutingTrace, offering: OfferingInfo) -> list[str]:
    ids = [m.id for m in trace.models]
    if len(ids) < 2 or offering.model_id not in ids:
        return []
    return [f"model {ids.index(offering.model_id) + 1} of {len(ids)} the selectors name"]


def _provider_rank(options: CallOptions, offering: OfferingInfo) -> list[str]:
    prefs = options.prefs
    reasons: list[str] = []
    if prefs.order:
        named = offering.place if offering.place in prefs.order else offering.provider.name
        if named in prefs.order:
            reasons.append(f"provider.order names {named}")
        else:
            reasons.append("provider.order does not name it: after those it names")
    if prefs.sort == "price":
        reasons.append(f"price {_prices(offering)}: cheapest first")
    else:
        reasons.append(f"provider.sort {prefs.sort}: measured first, then by price")
    return reasons


def _capability_rank(needs: Needs, offering: OfferingInfo) -> list[str]:
    reasons: list[str] = []
    if needs.tools:
        reasons.append("takes tools" if offering.tools else "takes no tools: behind those that do")
    if needs.json_schema:
        reasons.append(
            "takes a json_schema response format"
            if offering.json_schema
            else "takes no json_schema response format: behind those that do"
        )
    return reasons


def _key_reason(trace: RoutingTrace, index: int, candidate: Candidate) -> str:
    if candidate.key_source == "own":
        return "your saved key for it, tried before Momor's"
    earlier = trace.ranked[:index]
    if any(c.offering is candidate.offering and c.key_source == "own" for c in earlier):
        return "Momor's key, after your saved key"
    return "Momor's key"


def _prices(offering: OfferingInfo) -> str:
    prices = offering.prices
    return f"{_usd(prices.prompt)} prompt + {_usd(prices.completion)} completion USD per million"


def _usd(amount: Decimal) -> str:
    return format(amount.normalize(), "f")


# Offerings left out


def _left_out(trace: RoutingTrace) -> list[Json]:
    plan = trace.plan
    filtered = {(e["model"], e["provider"]): e["reason"] for e in (plan.excluded if plan else [])}
    ranked = {c.offering.id for c in trace.ranked}
    found: list[Json] = []
    for model in trace.models:
        for offering in model.offerings:
            if offering.id in ranked:
                continue
            reason = filtered.get((offering.model_id, offering.place)) or _unkept(trace, offering)
            found.append({**_named(offering), "position": None, "outcome": "left_out",
                          "why": [reason]})  # fmt: skip
    return found


def _unkept(trace: RoutingTrace, offering: OfferingInfo) -> str:
    """Why an offering the provider filters kept has no candidate: an input it cannot take, or
    no key that may call it."""
    needs = trace.needs
    if needs is not None and not needs.modalities <= offering.input_modalities:
        missing = ", ".join(sorted(needs.modalities - offering.input_modalities))
        return f"it takes no {missing} input, which the messages carry"
    if trace.org is None or trace.options is None:
        return "no key may call it"
    zdr = trace.options.prefs.zdr or trace.org.zdr_hold
    if keyed(offering, trace.org, zdr=False) and zdr:
        return (
            "under zero data retention no key may call it: your saved key for it is not marked "
            "zdr, or Momor's agreement with the provider does not cover it"
        )
    return "no key may call it: you saved none for it, and Momor holds none"


def _named(offering: OfferingInfo) -> Json:
    return {
        "model": offering.model_id,
        "provider": offering.place,
        "provider_name": offering.provider.label,
    }


# Selectors


def _selectors(trace: RoutingTrace) -> list[Json]:
    catalog, options, rules = trace.catalog, trace.options, trace.rules
    if catalog is None or options is None or rules is None:
        return []
    seen: set[str] = set()
    kind = trace.needs.kind if trace.needs is not None else ModelKind.CHAT
    return [_selector(catalog, s, rules, seen, kind) for s in options.selectors]


def _selector(catalog: Catalog, selector: str, rules: AgeRules, seen: set[str], kind: str) -> Json:
    lenient = AgeRules(allow_deprecated=True, max_age=None, today=rules.today)
    group = selector.lower().startswith(GROUPS)
    named: list[str] = []
    left_out: list[Json] = []
    for model in expand(catalog, selector, lenient, kind):
        if not model.offerings:
            continue
        if model.id in seen:
            left_out.append({"model": model.id, "why": "an earlier selector named it"})
        elif model.kind != kind:
            left_out.append({"model": model.id, "why": f"{KIND_NAMES[model.kind]} model"})
        elif group and not rules.admits(model):
            left_out.append({"model": model.id, "why": _age_reason(model, rules)})
        else:
            seen.add(model.id)
            named.append(model.id)
    entry: Json = {"selector": selector, "models": named}
    if left_out:
        entry["left_out"] = left_out
    if not named and not left_out:
        entry["why"] = "no configured model with an offering answers to it"
    return entry


def _age_reason(model: ModelInfo, rules: AgeRules) -> str:
    if model.deprecated and not rules.allow_deprecated:
        return "deprecated (provider.deprecated, else your organization's default)"
    if model.released is None:
        return "no release date, and a maximum age applies (provider.maxAge)"
    age: timedelta = rules.today - model.released
    return f"released {model.released.isoformat()}, {age.days} days ago: older than provider.maxAge"


# The summary


def _summary(ranked: list[Json], left_out: list[Json], ending: str | None) -> str:
    tried = [e for e in ranked if e.get("time_ms") is not None]
    parts = [f"{len(ranked)} candidate{'s' if len(ranked) != 1 else ''}"]
    parts.append(f"{len(left_out)} left out")
    if not ranked:
        return ", ".join(parts) + ": no candidate left"
    if ending == "served":
        parts.append(f"served by {tried[-1]['provider']} on try {len(tried)}")
    elif ending == "broken":
        parts.append(f"{tried[-1]['provider']} failed mid-answer on try {len(tried)}")
    else:
        parts.append(f"every one of {len(tried)} tries failed")
    return ", ".join(parts)
