"""The candidate list of one call: every (offering, key) pair that may serve it, in the order
they are tried."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from gateway.errors import GatewayError, model_not_found, unsupported_parameter
from gateway.identity import OrgInfo
from gateway.options import CallOptions, ProviderPrefs
from gateway.providers.contract import Target
from gateway.snapshot import ModelInfo, OfferingInfo

KeySource = Literal["own", "momor"]
PART_MODALITIES = {"image_url": "image", "input_audio": "audio", "file": "file"}


@dataclass(frozen=True, slots=True)
class Candidate:
    offering: OfferingInfo
    secret: str
    key_source: KeySource


def target_of(candidate: Candidate, *, stream: bool) -> Target:
    """What the candidate's adapter is given: the offering and key, without prices or
    anything else of routing's."""
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


def needs_of(body: dict[str, Any]) -> Needs:
    response_format = body.get("response_format")
    return Needs(
        tools=bool(body.get("tools")),
        json_schema=isinstance(response_format, dict)
        and response_format.get("type") == "json_schema",
        modalities=_modalities(body.get("messages")),
    )


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
    models: list[ModelInfo], options: CallOptions, org: OrgInfo, needs: Needs
) -> list[Candidate]:
    """Order the offerings of the resolved models and pair each with the keys that may call it."""
    offerings = [o for m in models for o in _ordered(m, options.prefs)]
    if not offerings:
        raise model_not_found(
            f"No model answering to {', '.join(options.selectors)} runs on a provider this call "
            "does not ignore."
        )
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


def _ordered(model: ModelInfo, prefs: ProviderPrefs) -> list[OfferingInfo]:
    kept = [o for o in model.offerings if o.place not in prefs.ignore]
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
    asked = ", ".join(options.selectors)
    if zdr:
        return model_not_found(
            f"No model answering to {asked} runs under zero data retention: none is served on "
            "a saved key marked zdr or on a Momor key its agreements cover."
        )
    return model_not_found(
        f"No model answering to {asked} runs on your own key or on a key Momor resells."
    )


def nothing_answers(options: CallOptions) -> GatewayError:
    return model_not_found(f"No configured model answers to {', '.join(options.selectors)}.")
