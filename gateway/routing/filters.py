"""The provider filters of a call (provider.ignore, only, data_collection, quantizations,
regions, require_parameters, max_price): each says why it leaves an offering out, or nothing
when the offering passes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.catalog.snapshot import OfferingInfo
from gateway.providers.contract import ChatRequest, fields
from gateway.providers.reasoning import BadReasoning, reasoning_asked
from gateway.request.options import ProviderPrefs

# What an offering that declares no parameters takes: OpenAI's common request parameters.
COMMON_PARAMETERS = frozenset(
    {
        "temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed",
        "frequency_penalty", "presence_penalty", "logit_bias", "logprobs", "top_logprobs", "n",
        "user", "tool_choice", "parallel_tool_calls", "response_format", "metadata",
        "service_tier", "store", "stream_options", "prediction", "modalities", "audio",
    }
)  # fmt: skip
# Fields that carry the conversation, route the call or are Momor's alone, and those each
# offering's capability flags answer for: never a parameter to declare.
NOT_PARAMETERS = frozenset(
    {"model", "models", "provider", "messages", "stream", "session_id", "tools", "max_tool_calls"}
)
REASONING_FIELDS = frozenset({"reasoning", "reasoning_effort", "include_reasoning"})


@dataclass(frozen=True, slots=True)
class Asked:
    """What the call sends that require_parameters checks."""

    parameters: frozenset[str]
    tools: bool
    json_schema: bool
    reasoning: bool


NOTHING_ASKED = Asked(frozenset(), tools=False, json_schema=False, reasoning=False)
"""What a call that is not a chat call asks of require_parameters."""

Filter = Callable[[OfferingInfo, ProviderPrefs, Asked], str | None]


def _ignored(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> str | None:
    if o.place in prefs.ignore:
        return "provider.ignore names it"
    return None


def _not_only(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> str | None:
    if prefs.only and o.place not in prefs.only:
        return "provider.only does not name it"
    return None


def _collects(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> str | None:
    if prefs.deny_data_collection and o.collects_data:
        return "its agreement may keep or train on the data (provider.data_collection: deny)"
    return None


def _quantization(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> str | None:
    if not prefs.quantizations or o.quantization in prefs.quantizations:
        return None
    if not o.quantization:
        return "it declares no quantization (provider.quantizations)"
    return f"its quantization {o.quantization} is not in provider.quantizations"


def _located(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> str | None:
    if prefs.regions and not (o.locations & prefs.regions):
        return "none of its locations is in provider.regions"
    return None


def _parameters(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> str | None:
    if not prefs.require_parameters:
        return None
    missing = sorted(asked.parameters - (o.parameters or COMMON_PARAMETERS))
    missing += ["tools"] if asked.tools and not o.tools else []
    missing += ["json_schema"] if asked.json_schema and not o.json_schema else []
    missing += ["reasoning"] if asked.reasoning and not o.reasoning_efforts else []
    if missing:
        return f"it does not take {', '.join(missing)} (provider.require_parameters)"
    return None


def _priced_above(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> str | None:
    ceiling = prefs.max_price
    if ceiling is None:
        return None
    if (ceiling.prompt is not None and o.prices.prompt > ceiling.prompt) or (
        ceiling.completion is not None and o.prices.completion > ceiling.completion
    ):
        return "priced above provider.max_price"
    return None


FILTERS: tuple[Filter, ...] = (
    _ignored, _not_only, _collects, _quantization, _located, _parameters, _priced_above,
)  # fmt: skip
PRICE_FILTER = _priced_above


def left_out(o: OfferingInfo, prefs: ProviderPrefs, asked: Asked) -> tuple[Filter, str] | None:
    """The first filter that leaves the offering out, and why."""
    for check in FILTERS:
        reason = check(o, prefs, asked)
        if reason is not None:
            return check, reason
    return None


def asked_of(request: ChatRequest, tools: bool, json_schema: bool) -> Asked:
    names = frozenset(fields(request)) - NOT_PARAMETERS
    return Asked(
        parameters=names - REASONING_FIELDS,
        tools=tools,
        json_schema=json_schema,
        reasoning=bool(names & REASONING_FIELDS) and _thinks(request),
    )


def _thinks(request: ChatRequest) -> bool:
    """Whether the call asks the model to reason: reasoning turned off, or kept out of the
    answer alone, asks nothing of an offering."""
    try:
        ask = reasoning_asked(request)
    except BadReasoning:
        return False
    return ask is not None and ask.thinks
